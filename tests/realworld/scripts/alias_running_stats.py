# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder batch-norm running-stats updates in NVIDIA/Fuser issues:
# fd.add_output(T, alias_input) writes T into the input and returns nothing for it.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.sum(T0, dims=[0], keepdim=False, dtype=DataType.Null)
    S3 = fd.define_scalar(0.125, dtype=DataType.Double)
    T4 = fd.ops.mul(T2, S3)
    S5 = fd.define_scalar(0.9, dtype=DataType.Double)
    T6 = fd.ops.mul(T1, S5)
    S7 = fd.define_scalar(0.1, dtype=DataType.Double)
    T8 = fd.ops.mul(T4, S7)
    T9 = fd.ops.add(T6, T8)
    fd.add_output(T9, T1)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((8, 12), dtype=torch.float32, device='cuda:0'),
    torch.randn((12,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
