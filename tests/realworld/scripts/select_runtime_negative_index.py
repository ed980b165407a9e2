# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser's python test of fd.ops.select (tests/python: select with an index
# given as a runtime define_scalar) used the way torch indexes: a negative index counts from
# the end, so x.select(1, -1) picks the last token's hidden state and -2 the one before.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    T2 = fd.ops.select(T0, S1, dim=1)
    T3 = fd.ops.select(T0, -1, dim=1)
    T4 = fd.ops.cast(T2, dtype=DataType.Float)
    T5 = fd.ops.cast(T3, dtype=DataType.Float)
    T6 = fd.ops.sub(T5, T4)
    T7 = fd.ops.mul(T6, T6)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T3)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((3, 10, 64), dtype=torch.bfloat16, device='cuda:0'),
    -2,
]
fd.execute(inputs)
