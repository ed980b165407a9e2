# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issues #2390 and #1745 (Thunder CI, 2024): two activations
# cat along the last dim, reshaped by a define_vector of define_scalar sizes into
# [B, T, G, 3, D], permuted, and q/k/v sliced with strides= but no
# manual_normalization (the older spelling); k and v squeezed by reshape, expanded
# across a new query-per-group dim (GQA) and reshaped to [B, G*Q, T, D]; q scaled and
# shifted by cos/sin-like operands given as contiguity [None, None, True, True]
# (expanded over batch and heads).
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[None, None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[None, None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.ops.cat([T0, T3], dim=-1)
    S5 = fd.define_scalar(2, dtype=DataType.Int)
    S6 = fd.define_scalar(6, dtype=DataType.Int)
    S7 = fd.define_scalar(2, dtype=DataType.Int)
    S8 = fd.define_scalar(3, dtype=DataType.Int)
    S9 = fd.define_scalar(8, dtype=DataType.Int)
    V10 = fd.define_vector([S5, S6, S7, S8, S9], dtype=DataType.Int)
    T11 = fd.ops.reshape(T4, new_shape=V10)
    T12 = fd.ops.permute(T11, dims=[0, 2, 3, 1, 4])
    T13 = fd.ops.slice(T12, start_indices=[0, 0, 0, 0, 0], end_indices=[2, 2, 1, 6, 8], strides=[1, 1, 1, 1, 1])
    T14 = fd.ops.slice(T12, start_indices=[0, 0, 1, 0, 0], end_indices=[2, 2, 2, 6, 8], strides=[1, 1, 1, 1, 1])
    T15 = fd.ops.slice(T12, start_indices=[0, 0, 2, 0, 0], end_indices=[2, 2, 3, 6, 8], strides=[1, 1, 1, 1, 1])
    T32 = fd.ops.reshape(T14, new_shape=[2, 2, 6, 8])
    T33 = fd.ops.reshape(T15, new_shape=[2, 2, 6, 8])
    T16 = fd.ops.broadcast_in_dim(T32, shape=[2, 2, 2, 6, 8], broadcast_dims=[0, 1, 3, 4])
    T17 = fd.ops.broadcast_in_dim(T33, shape=[2, 2, 2, 6, 8], broadcast_dims=[0, 1, 3, 4])
    S18 = fd.define_scalar(2, dtype=DataType.Int)
    S19 = fd.define_scalar(4, dtype=DataType.Int)
    S20 = fd.define_scalar(6, dtype=DataType.Int)
    S21 = fd.define_scalar(8, dtype=DataType.Int)
    V22 = fd.define_vector([S18, S19, S20, S21], dtype=DataType.Int)
    T23 = fd.ops.reshape(T13, new_shape=[2, 2, 6, 8])
    T24 = fd.ops.reshape(T16, new_shape=V22)
    T25 = fd.ops.reshape(T17, new_shape=V22)
    T26 = fd.ops.cast(T23, dtype=DataType.Float)
    T27 = fd.ops.cast(T1, dtype=DataType.Float)
    T28 = fd.ops.mul(T26, T27)
    T29 = fd.ops.cast(T2, dtype=DataType.Float)
    T30 = fd.ops.add(T28, T29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    fd.add_output(T31)
    fd.add_output(T24)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 6, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((48,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 2, 6, 8), (0, 0, 8, 1)),
    torch.randn((48,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 2, 6, 8), (0, 0, 8, 1)),
    torch.testing.make_tensor((2, 6, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
