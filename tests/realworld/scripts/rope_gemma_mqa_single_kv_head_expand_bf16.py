# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF Gemma-2B attention (multi-query: 8 query heads of 256, one key/value head)
# as Thunder hands it to nvFuser, in the form of NVIDIA/Fuser benchmarks/python/test_rope.py's
# HF variants: q [B, S, H*D] and the single-head k, v [B, S, D] projections reshaped to
# heads (k and v through a size-1 head axis) and transposed; cos/sin [B, S, D] broadcast to
# [B, 1, S, D] and on to the query heads; rotate-half on q and on the one key head; the
# rotated key and the value expanded to all H heads by broadcast_in_dim (repeat_kv with
# n_rep = H).
# real-sizes: 24=256 13=4096 12=128 5=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 120], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 24], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 13, 24], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 13, 24], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 13, 24], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T10 = fd.ops.reshape(T0, new_shape=[1, 13, 5, 24])
    T11 = fd.ops.permute(T10, dims=[0, 2, 1, 3])
    T17 = fd.ops.reshape(T1, new_shape=[1, 13, 1, 24])
    T18 = fd.ops.permute(T17, dims=[0, 2, 1, 3])
    T24 = fd.ops.reshape(T2, new_shape=[1, 13, 1, 24])
    T25 = fd.ops.permute(T24, dims=[0, 2, 1, 3])
    T31 = fd.ops.broadcast_in_dim(T3, shape=[1, 1, 13, 24], broadcast_dims=[0, 2, 3])
    T37 = fd.ops.broadcast_in_dim(T4, shape=[1, 1, 13, 24], broadcast_dims=[0, 2, 3])
    T43 = fd.ops.broadcast_in_dim(T31, shape=[1, 5, 13, 24], broadcast_dims=[0, 1, 2, 3])
    T44 = fd.ops.cast(T43, dtype=DataType.Float)
    T50 = fd.ops.broadcast_in_dim(T37, shape=[1, 5, 13, 24], broadcast_dims=[0, 1, 2, 3])
    T51 = fd.ops.cast(T50, dtype=DataType.Float)
    T67 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T83 = fd.ops.slice(T11, start_indices=[0, 0, 0, 12], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T84 = fd.ops.cast(T83, dtype=DataType.Float)
    T85 = fd.ops.neg(T84)
    T86 = fd.ops.cast(T85, dtype=DataType.BFloat16)
    T87 = fd.ops.cat([T86, T67], dim=-1, manual_padding=0)
    T88 = fd.ops.cast(T11, dtype=DataType.Float)
    T89 = fd.ops.mul(T88, T44)
    T90 = fd.ops.cast(T87, dtype=DataType.Float)
    T91 = fd.ops.mul(T90, T51)
    T92 = fd.ops.add(T89, T91)
    T93 = fd.ops.cast(T92, dtype=DataType.BFloat16)
    T94 = fd.ops.cast(T31, dtype=DataType.Float)
    T95 = fd.ops.cast(T37, dtype=DataType.Float)
    T111 = fd.ops.slice(T18, start_indices=[0, 0, 0, 0], end_indices=[1, 1, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T127 = fd.ops.slice(T18, start_indices=[0, 0, 0, 12], end_indices=[1, 1, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T128 = fd.ops.cast(T127, dtype=DataType.Float)
    T129 = fd.ops.neg(T128)
    T130 = fd.ops.cast(T129, dtype=DataType.BFloat16)
    T131 = fd.ops.cat([T130, T111], dim=-1, manual_padding=0)
    T132 = fd.ops.cast(T18, dtype=DataType.Float)
    T133 = fd.ops.mul(T132, T94)
    T134 = fd.ops.cast(T131, dtype=DataType.Float)
    T135 = fd.ops.mul(T134, T95)
    T136 = fd.ops.add(T133, T135)
    T137 = fd.ops.cast(T136, dtype=DataType.BFloat16)
    T143 = fd.ops.broadcast_in_dim(T137, shape=[1, 5, 13, 24], broadcast_dims=[0, 1, 2, 3])
    T149 = fd.ops.broadcast_in_dim(T25, shape=[1, 5, 13, 24], broadcast_dims=[0, 1, 2, 3])
    fd.add_output(T93)
    fd.add_output(T143)
    fd.add_output(T149)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 120), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
