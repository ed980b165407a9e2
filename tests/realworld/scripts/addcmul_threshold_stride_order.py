# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder-generated nvFuser traces: an optimizer-style addcmul, a threshold
# (relu with a cut-off) and `fd.ops.stride_order`, which Thunder emits to give an output
# the strides torch expects (here column-major).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S3 = fd.define_scalar(0.25, dtype=DataType.Double)
    T4 = fd.ops.cast(T2, dtype=DataType.Float)
    T5 = fd.ops.addcmul(T0, T1, T4, S3)
    T6 = fd.ops.threshold(T5, 0.0, 0.0)
    T7 = fd.ops.stride_order(T6, stride_order=[0, 1])
    fd.add_output(T7)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.testing.make_tensor((48, 80), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((48, 80), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((48, 80), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
