# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder-generated nvFuser traces of a causal attention softmax: the mask is
# `torch.ones(S, S, dtype=bool).triu(1)` (fd.ops.full + fd.ops.triu), filled into the bf16
# scores with a large negative value, then a numerically stable softmax.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S1 = fd.define_scalar(True, dtype=DataType.Bool)
    T2 = fd.ops.full(shape=[16, 16], fill_value=S1, dtype=DataType.Bool)
    T3 = fd.ops.triu(T2, diagonal=1)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5 = fd.ops.broadcast_in_dim(T3, shape=[4, 16, 16], broadcast_dims=[1, 2])
    S6 = fd.define_scalar(-10000.0, dtype=DataType.Double)
    T7 = fd.ops.where(T5, S6, T4)
    T8 = fd.ops.max(T7, dims=[2], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.broadcast_in_dim(T8, shape=[4, 16, 1], broadcast_dims=[0, 1])
    T10 = fd.ops.sub(T7, T9)
    T11 = fd.ops.exp(T10)
    T12 = fd.ops.sum(T11, dims=[2], keepdim=False, dtype=DataType.Null)
    T13 = fd.ops.broadcast_in_dim(T12, shape=[4, 16, 1], broadcast_dims=[0, 1])
    T14 = fd.ops.div(T11, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T15)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.testing.make_tensor((4, 16, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
