# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvfuser_direct repros (NVIDIA/Fuser python/python_direct, 2025-2026):
# `from nvfuser_direct import FusionDefinition, DataType`, ops with dims=, shape=.
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.ops.broadcast_in_dim(tv1, shape=[7, 9], broadcast_dims=[1])
    tv3 = fd.ops.mul(tv0, tv2)
    tv4 = fd.ops.sum(tv3, dims=[1], keepdim=False, dtype=DataType.Float)
    fd.add_output(tv4)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((7, 9), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((9,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
