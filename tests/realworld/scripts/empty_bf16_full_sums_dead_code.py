# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1270 (test_repro.py test_issue1270): two empty bf16
# inputs of shape (5, 0), one with stride 0 on its empty axis, multiplied by a full() of
# the same empty shape and summed over each axis: one output is five zeros, the other is
# empty.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    S3 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T4 = fd.ops.full(fill_value=S3, shape=[5, 0], dtype=DataType.BFloat16)
    T5 = fd.ops.cast(T4, dtype=DataType.Float)
    T6 = fd.ops.mul(T2, T5)
    T7 = fd.ops.cast(T0, dtype=DataType.Float)
    T8 = fd.ops.mul(T7, T5)
    T24 = fd.ops.sum(T6, dims=[1], keepdim=False, dtype=DataType.Null)
    T11 = fd.ops.sum(T8, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T24)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(0, device='cuda', dtype=torch.bfloat16).as_strided((5, 0), (1, 0)),
    torch.randn(0, device='cuda', dtype=torch.bfloat16).as_strided((5, 0), (0, 1)),
]
fd.execute(inputs)
