# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/opinfo opinfos (isfinite, isinf, isnan, isneginf,
# isposinf, atan2, maximum, minimum, logical ops) and nan-masking repros (test_nanogpt
# style masking): infinities and NaNs made inside the fusion (div by zero, log of a
# negative), then detected and replaced with where.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id13(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(0.0, dtype=DataType.Double)
    T3 = fd.ops.gt(T0, S2)
    T4 = fd.ops.where(T3, T0, S2)
    T5 = fd.ops.reciprocal(T4)
    T6 = fd.ops.neg(T5)
    T7 = fd.ops.log(T1)
    T8 = fd.ops.isposinf(T5)
    T9 = fd.ops.isneginf(T6)
    T10 = fd.ops.isnan(T7)
    T11 = fd.ops.isinf(T6)
    T12 = fd.ops.isfinite(T7)
    T13 = fd.ops.logical_and(T8, T9)
    T14 = fd.ops.logical_or(T10, T13)
    T15 = fd.ops.logical_not(T12)
    T16 = fd.ops.atan2(T0, T1)
    T17 = fd.ops.maximum(T0, T1)
    T18 = fd.ops.minimum(T0, T1)
    T19 = fd.ops.sub(T17, T18)
    S20 = fd.define_scalar(-1.0, dtype=DataType.Double)
    T21 = fd.ops.where(T14, S20, T16)
    T22 = fd.ops.add(T21, T19)
    fd.add_output(T22)
    fd.add_output(T15)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id13(fd)

inputs = [
    torch.randn((16, 33), dtype=torch.float32, device='cuda:0'),
    torch.randn((16, 33), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
