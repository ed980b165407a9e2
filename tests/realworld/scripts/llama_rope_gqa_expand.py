# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/llama_inf_tests/graph_1.py (Llama-3 attention
# prologue from Thunder), without the projections: position ids from iota, the rotary
# angles as a matmul of inv_freq [1, F, 1] by positions [1, 1, S], cat of the angles with
# themselves, sin/cos, q and k reshaped to [B, S, H, D] and permuted to [B, H, S, D], halves
# sliced with manual_normalization, the second half negated in float, cat, mul/add with
# cos/sin; k repeated for grouped-query attention by a 5-D broadcast and a reshape, and
# stride_order on the outputs.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 6, 64], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 6, 32], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[8], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    S3 = fd.define_scalar(6, dtype=DataType.Int)
    S4 = fd.define_scalar(0, dtype=DataType.Int)
    S5 = fd.define_scalar(1, dtype=DataType.Int)
    T6 = fd.ops.iota(S3, S4, S5, dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T6, shape=[1, 6], broadcast_dims=[1])
    T8 = fd.ops.broadcast_in_dim(T2, shape=[1, 8, 1], broadcast_dims=[1])
    T9 = fd.ops.broadcast_in_dim(T7, shape=[1, 1, 6], broadcast_dims=[0, 2])
    T10 = fd.ops.cast(T8, dtype=DataType.Float)
    T11 = fd.ops.cast(T9, dtype=DataType.Float)
    T12 = fd.ops.broadcast_in_dim(T10, shape=[1, 8, 1], broadcast_dims=[0, 1, 2])
    T13 = fd.ops.matmul(T12, T11)
    T14 = fd.ops.permute(T13, dims=[0, 2, 1])
    T15 = fd.ops.cat([T14, T14], dim=-1, manual_padding=0)
    T16 = fd.ops.sin(T15)
    T17 = fd.ops.cos(T15)
    S18 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T19 = fd.ops.mul(T16, S18)
    T20 = fd.ops.mul(T17, S18)
    T21 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T22 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    T23 = fd.ops.broadcast_in_dim(T21, shape=[1, 1, 6, 16], broadcast_dims=[0, 2, 3])
    T24 = fd.ops.broadcast_in_dim(T22, shape=[1, 1, 6, 16], broadcast_dims=[0, 2, 3])
    T25 = fd.ops.reshape(T0, new_shape=[1, 6, 4, 16])
    T26 = fd.ops.permute(T25, dims=[0, 2, 1, 3])
    T27 = fd.ops.slice(T26, start_indices=[0, 0, 0, 0], end_indices=[1, 4, 6, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T28 = fd.ops.slice(T26, start_indices=[0, 0, 0, 8], end_indices=[1, 4, 6, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T29 = fd.ops.cast(T28, dtype=DataType.Float)
    T30 = fd.ops.neg(T29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    T32 = fd.ops.cat([T31, T27], dim=-1, manual_padding=0)
    T33 = fd.ops.broadcast_in_dim(T24, shape=[1, 4, 6, 16], broadcast_dims=[0, 1, 2, 3])
    T34 = fd.ops.broadcast_in_dim(T23, shape=[1, 4, 6, 16], broadcast_dims=[0, 1, 2, 3])
    T35 = fd.ops.cast(T26, dtype=DataType.Float)
    T36 = fd.ops.cast(T33, dtype=DataType.Float)
    T37 = fd.ops.mul(T35, T36)
    T38 = fd.ops.cast(T32, dtype=DataType.Float)
    T39 = fd.ops.cast(T34, dtype=DataType.Float)
    T40 = fd.ops.mul(T38, T39)
    T41 = fd.ops.add(T37, T40)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    T43 = fd.ops.reshape(T1, new_shape=[1, 6, 2, 16])
    T44 = fd.ops.permute(T43, dims=[0, 2, 1, 3])
    T45 = fd.ops.slice(T44, start_indices=[0, 0, 0, 0], end_indices=[1, 2, 6, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T46 = fd.ops.slice(T44, start_indices=[0, 0, 0, 8], end_indices=[1, 2, 6, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T47 = fd.ops.cast(T46, dtype=DataType.Float)
    T48 = fd.ops.neg(T47)
    T49 = fd.ops.cast(T48, dtype=DataType.BFloat16)
    T50 = fd.ops.cat([T49, T45], dim=-1, manual_padding=0)
    T51 = fd.ops.broadcast_in_dim(T24, shape=[1, 2, 6, 16], broadcast_dims=[0, 1, 2, 3])
    T52 = fd.ops.broadcast_in_dim(T23, shape=[1, 2, 6, 16], broadcast_dims=[0, 1, 2, 3])
    T53 = fd.ops.cast(T44, dtype=DataType.Float)
    T54 = fd.ops.cast(T51, dtype=DataType.Float)
    T55 = fd.ops.mul(T53, T54)
    T56 = fd.ops.cast(T50, dtype=DataType.Float)
    T57 = fd.ops.cast(T52, dtype=DataType.Float)
    T58 = fd.ops.mul(T56, T57)
    T59 = fd.ops.add(T55, T58)
    T60 = fd.ops.cast(T59, dtype=DataType.BFloat16)
    T61 = fd.ops.broadcast_in_dim(T60, shape=[1, 2, 1, 6, 16], broadcast_dims=[0, 1, 3, 4])
    T62 = fd.ops.broadcast_in_dim(T61, shape=[1, 2, 2, 6, 16], broadcast_dims=[0, 1, 2, 3, 4])
    T63 = fd.ops.reshape(T62, new_shape=[1, 4, 6, 16])
    T64 = fd.ops.stride_order(T42, stride_order=[3, 2, 1, 0])
    T65 = fd.ops.stride_order(T63, stride_order=[3, 2, 1, 0])
    fd.add_output(T64)
    fd.add_output(T65)
    fd.add_output(T60)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.testing.make_tensor((1, 6, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 6, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8,), dtype=torch.bfloat16, device='cuda:0', low=0.0, high=1.0),
]
fd.execute(inputs)
