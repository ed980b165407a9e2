# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py scalar tests
# (test_scalar_only_inputs, test_reshape_dynamic) and Thunder traces that branch on runtime
# scalars: comparisons, pow, remainder, fmod and bitwise ops on scalars only, whose Bool or
# Int results then feed tensor ops (where on a scalar predicate, a scalar multiplier).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id21(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S4 = fd.ops.lt(S1, S3)
    S5 = fd.define_scalar(2.00000, dtype=DataType.Double)
    S6 = fd.ops.pow(S1, S5)
    T7 = fd.ops.mul(T0, S6)
    T8 = fd.ops.where(S4, T7, T0)
    S9 = fd.define_scalar(6, dtype=DataType.Int)
    S10 = fd.ops.bitwise_and(S2, S9)
    S11 = fd.define_scalar(1, dtype=DataType.Int)
    S12 = fd.ops.bitwise_left_shift(S10, S11)
    S13 = fd.define_scalar(-5, dtype=DataType.Int)
    S14 = fd.ops.remainder(S13, S2)
    S15 = fd.ops.fmod(S13, S2)
    S16 = fd.ops.add(S12, S14)
    S17 = fd.ops.sub(S16, S15)
    S18 = fd.ops.ge(S2, S9)
    S19 = fd.ops.logical_or(S18, S4)
    T20 = fd.ops.add(T8, S17)
    T21 = fd.ops.where(S19, T20, T8)
    S22 = fd.ops.maximum(S1, S3)
    T23 = fd.ops.mul(T21, S22)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id21(fd)

inputs = [
    torch.randn((12, 40), dtype=torch.float32, device='cuda:0'),
    0.75,
    7,
]
fd.execute(inputs)
