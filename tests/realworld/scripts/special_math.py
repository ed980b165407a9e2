# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder traces of torch.special / bit-twiddling code: erfcinv, nextafter and
# isreal on floats; gcd and a zero-filling right shift (fd.ops.logical_right_shift) on int64.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.abs(T0)
    S3 = fd.define_scalar(0.125, dtype=DataType.Double)
    T4 = fd.ops.mul(T2, S3)
    T5 = fd.ops.erfcinv(T4)
    T6 = fd.ops.nextafter(T0, T5)
    T7 = fd.ops.isreal(T6)
    S8 = fd.define_scalar(12, dtype=DataType.Int)
    T9 = fd.ops.gcd(T1, S8)
    S10 = fd.define_scalar(3, dtype=DataType.Int)
    T11 = fd.ops.logical_right_shift(T1, S10)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T9)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((24, 40), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((24, 40), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
