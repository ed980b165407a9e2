# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder rotary-embedding (RoPE) fusions from NVIDIA/Fuser issues: permute,
# slice halves, neg, cat, mul by cos/sin, add; pad in a second branch.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id11(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T4 = fd.ops.slice(T3, start_indices=[0, 0, 0, 0], end_indices=[1, 2, 8, 8], strides=[1, 1, 1, 1])
    T5 = fd.ops.slice(T3, start_indices=[0, 0, 0, 8], end_indices=[1, 2, 8, 16], strides=[1, 1, 1, 1])
    T6 = fd.ops.cast(T5, dtype=DataType.Float)
    T7 = fd.ops.neg(T6)
    T8 = fd.ops.cast(T7, dtype=DataType.BFloat16)
    T9 = fd.ops.cat([T8, T4], dim=-1)
    T10 = fd.ops.broadcast_in_dim(T1, shape=[1, 2, 8, 16], broadcast_dims=[2, 3])
    T11 = fd.ops.broadcast_in_dim(T2, shape=[1, 2, 8, 16], broadcast_dims=[2, 3])
    T12 = fd.ops.cast(T3, dtype=DataType.Float)
    T13 = fd.ops.cast(T10, dtype=DataType.Float)
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.cast(T9, dtype=DataType.Float)
    T16 = fd.ops.cast(T11, dtype=DataType.Float)
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.add(T14, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    S20 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T21 = fd.ops.pad(T4, [0, 8, 0, 0, 0, 0, 0, 0], S20)
    fd.add_output(T19)
    fd.add_output(T21)


with FusionDefinition() as fd:
    nvfuser_fusion_id11(fd)

inputs = [
    torch.testing.make_tensor((1, 8, 2, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
