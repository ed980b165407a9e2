# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2354 (test_repro.py test_issue2354): a linear of a 3-D
# input without bias, output both as is and multiplied by a Double constant.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.linear(T1, T0)
    S3 = fd.define_scalar(1.41421, dtype=DataType.Double)
    T4 = fd.ops.mul(T2, S3)
    fd.add_output(T2)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((8, 4), dtype=torch.float32, device='cuda:0'),
    torch.randn((6, 2, 4), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
