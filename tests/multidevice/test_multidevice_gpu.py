"""The multi-device cases on GPUs (pytest -m gpu): two ranks sharing one GPU over gloo, and one
rank per GPU over NCCL on machines with 2 or 4 GPUs (each process takes the GPU of its
LOCAL_RANK, as under torchrun)."""

import pytest

from tests.multidevice.harness import batched
from tests.multidevice.test_multidevice_cpu import REFERENCE


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _skip_reason(case: str, world: int) -> str:
    if _gpus() < world:
        return f"needs {world} GPUs, this machine has {_gpus()}"
    if case in ("mesh_2d", "sample_tp_mlp", "sample_sp_mlp") and world != 2:
        return "written for 2 ranks"
    return ""


@pytest.mark.gpu
@pytest.mark.parametrize("case", REFERENCE)
def test_two_ranks_share_a_gpu_over_gloo(case: str, request: pytest.FixtureRequest) -> None:
    """The regions compiled for the GPU (NVRTC kernels, ATen GEMMs) on two ranks that share
    one GPU; gloo carries the communications (NCCL refuses two ranks on one device)."""
    batched(request, case, world=2, backend="cuda", dist_backend="gloo")


@pytest.mark.gpu
@pytest.mark.parametrize("world", [2, 4])
# The bundled multi-device samples too (tests/engine/test_files_gpu.py runs the others).
@pytest.mark.parametrize("case", [*REFERENCE, "sample_tp_mlp", "sample_sp_mlp"])
def test_ranks_on_gpus(case: str, world: int, request: pytest.FixtureRequest) -> None:
    reason = _skip_reason(case, world)
    if reason:
        pytest.skip(reason)
    batched(request, case, world=world, backend="cuda",
            runs=lambda item: not _skip_reason(item.callspec.params["case"], item.callspec.params["world"]))
