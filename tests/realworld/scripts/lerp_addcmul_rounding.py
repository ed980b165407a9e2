# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/opinfo unary/ternary opinfos and Thunder optimizer
# traces (an Adam-style update): lerp with a scalar and a tensor weight, addcmul with a
# value, rounding ops (floor, ceil, round, trunc, frac) on doubles, sign and abs.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id9(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Double, is_cpu=False)
    S4 = fd.define_scalar(0.1, dtype=DataType.Double)
    T5 = fd.ops.lerp(T1, T0, S4)
    T6 = fd.ops.sigmoid(T2)
    T7 = fd.ops.lerp(T0, T1, T6)
    S8 = fd.define_scalar(-0.001, dtype=DataType.Double)
    T9 = fd.ops.addcmul(T0, T5, T7, S8)
    S10 = fd.define_scalar(3.0, dtype=DataType.Double)
    T11 = fd.ops.mul(T3, S10)
    T12 = fd.ops.floor(T11)
    T13 = fd.ops.ceil(T11)
    T14 = fd.ops.round(T11)
    T15 = fd.ops.trunc(T11)
    T16 = fd.ops.frac(T11)
    T17 = fd.ops.add(T12, T13)
    T18 = fd.ops.add(T14, T15)
    T19 = fd.ops.sub(T17, T18)
    T20 = fd.ops.add(T19, T16)
    T21 = fd.ops.sign(T3)
    T22 = fd.ops.abs(T3)
    T23 = fd.ops.mul(T21, T22)
    fd.add_output(T9)
    fd.add_output(T5)
    fd.add_output(T20)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id9(fd)

inputs = [
    torch.randn((1000,), dtype=torch.float32, device='cuda:0'),
    torch.randn((1000,), dtype=torch.float32, device='cuda:0'),
    torch.randn((1000,), dtype=torch.float32, device='cuda:0'),
    torch.randn((1000,), dtype=torch.float64, device='cuda:0'),
]
fd.execute(inputs)
