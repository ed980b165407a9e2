"""The multi-device cases on the GPUs of one host over NCCL (pytest -m gpu on a machine with
2 or more GPUs; each process takes one GPU, as torchrun's LOCAL_RANK)."""

import pytest

from tests.multidevice.harness import spawn
from tests.multidevice.test_multidevice_cpu import REFERENCE


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.parametrize("world", [2, 4])
# The bundled multi-device samples too (tests/engine/test_files_gpu.py runs the others).
@pytest.mark.parametrize("case", [*REFERENCE, "sample_tp_mlp", "sample_sp_mlp"])
def test_ranks_on_gpus(case: str, world: int) -> None:
    if _gpus() < world:
        pytest.skip(f"needs {world} GPUs, this machine has {_gpus()}")
    if case in ("mesh_2d", "sample_tp_mlp", "sample_sp_mlp") and world != 2:
        pytest.skip("written for 2 ranks")
    spawn(case, world=world, backend="cuda")
