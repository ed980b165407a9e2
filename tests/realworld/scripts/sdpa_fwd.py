# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder SDPA fusions (NVIDIA/Fuser test_sdpa.py): fd.ops.sdpfa_fwd with
# dropout and causal scalars.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    S3 = fd.define_scalar(0.0, dtype=DataType.Double)
    S4 = fd.define_scalar(True, dtype=DataType.Bool)
    T5, T6, T7, T8 = fd.ops.sdpfa_fwd(T0, T1, T2, S3, S4, None)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 2, 8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2, 8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 2, 8, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
