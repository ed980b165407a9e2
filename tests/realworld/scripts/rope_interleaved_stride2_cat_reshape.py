# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_repro.py test_reshape_cancellation (a Thunder trace of an
# interleaved RoPE): bf16 inputs with stride 2 on the last axis (contiguity False there,
# the even/odd halves of an interleaved pair), cos given with stride 0 on the heads axis,
# pairs built by broadcasting to a trailing size-1 axis and cat along it, reshaped back
# (a reshape cancelling a split), q/k slices of a fused qkv tensor reshaped through
# [.., G, R, D] to [.., G*R, D], rotary and pass-through parts cat back, and permutes.
# Shrunk: S 2048 -> 3, 24 heads (4 groups of 6) -> 6 (2 groups of 3), D 256 -> 16,
# rotary 64 -> 8.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 3, 6, 4], contiguity=[None, True, True, False], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 3, 6, 4], contiguity=[None, True, True, False], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 3, 6, 4], contiguity=[None, True, True, False], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 3, 2, 144], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 3, 6, 4], contiguity=[None, True, True, False], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T5 = fd.define_tensor(shape=[1, 3, 6, 8], contiguity=[None, True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T6 = fd.define_tensor(shape=[1, 3, 6, 8], contiguity=[None, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T7 = fd.define_tensor(shape=[1, 3, 6, 8], contiguity=[None, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T8 = fd.ops.cast(T0, dtype=DataType.Float)
    T9 = fd.ops.neg(T8)
    T10 = fd.ops.cast(T9, dtype=DataType.BFloat16)
    T17 = fd.ops.broadcast_in_dim(T1, shape=[1, 3, 6, 4, 1], broadcast_dims=[0, 1, 2, 3])
    T24 = fd.ops.broadcast_in_dim(T10, shape=[1, 3, 6, 4, 1], broadcast_dims=[0, 1, 2, 3])
    T25 = fd.ops.cast(T2, dtype=DataType.Float)
    T41 = fd.ops.slice(T3, start_indices=[0, 0, 0, 96], end_indices=[1, 3, 2, 144], strides=[1, 1, 1, 1], manual_normalization=0)
    T42 = fd.ops.cat([T24, T17], dim=-1, manual_padding=0)
    T43 = fd.ops.neg(T25)
    T50 = fd.ops.reshape(T41, new_shape=[1, 3, 2, 3, 16])
    T56 = fd.ops.reshape(T42, new_shape=[1, 3, 6, 8])
    T57 = fd.ops.cast(T43, dtype=DataType.BFloat16)
    T63 = fd.ops.reshape(T50, new_shape=[1, 3, 6, 16])
    T64 = fd.ops.cast(T56, dtype=DataType.Float)
    T71 = fd.ops.broadcast_in_dim(T4, shape=[1, 3, 6, 4, 1], broadcast_dims=[0, 1, 2, 3])
    T78 = fd.ops.broadcast_in_dim(T57, shape=[1, 3, 6, 4, 1], broadcast_dims=[0, 1, 2, 3])
    T94 = fd.ops.slice(T63, start_indices=[0, 0, 0, 8], end_indices=[1, 3, 6, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T95 = fd.ops.mul(T64, T5)
    T111 = fd.ops.slice(T3, start_indices=[0, 0, 0, 0], end_indices=[1, 3, 2, 48], strides=[1, 1, 1, 1], manual_normalization=0)
    T112 = fd.ops.cat([T78, T71], dim=-1, manual_padding=0)
    T113 = fd.ops.cast(T94, dtype=DataType.Float)
    T114 = fd.ops.add(T6, T95)
    T121 = fd.ops.reshape(T111, new_shape=[1, 3, 2, 3, 16])
    T127 = fd.ops.reshape(T112, new_shape=[1, 3, 6, 8])
    T128 = fd.ops.cat([T114, T113], dim=-1, manual_padding=0)
    T134 = fd.ops.reshape(T121, new_shape=[1, 3, 6, 16])
    T135 = fd.ops.cast(T127, dtype=DataType.Float)
    T136 = fd.ops.permute(T128, dims=[0, 2, 1, 3])
    T152 = fd.ops.slice(T134, start_indices=[0, 0, 0, 8], end_indices=[1, 3, 6, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T153 = fd.ops.mul(T135, T5)
    T154 = fd.ops.cast(T136, dtype=DataType.BFloat16)
    T155 = fd.ops.cast(T152, dtype=DataType.Float)
    T156 = fd.ops.add(T7, T153)
    T157 = fd.ops.cat([T156, T155], dim=-1, manual_padding=0)
    T158 = fd.ops.permute(T136, dims=[0, 1, 3, 2])
    T159 = fd.ops.permute(T157, dims=[0, 2, 1, 3])
    fd.add_output(T159)
    fd.add_output(T154)
    fd.add_output(T158)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(143, dtype=torch.bfloat16, device='cuda:0').as_strided((1, 3, 6, 4), (144, 48, 8, 2)),
    torch.randn(143, dtype=torch.bfloat16, device='cuda:0').as_strided((1, 3, 6, 4), (144, 48, 8, 2)),
    torch.randn(143, dtype=torch.bfloat16, device='cuda:0').as_strided((1, 3, 6, 4), (144, 48, 8, 2)),
    torch.testing.make_tensor((1, 3, 2, 144), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.randn(143, dtype=torch.bfloat16, device='cuda:0').as_strided((1, 3, 6, 4), (144, 48, 8, 2)),
    torch.randn(24, dtype=torch.float32, device='cuda:0').as_strided((1, 3, 6, 8), (24, 8, 0, 1)),
    torch.testing.make_tensor((1, 3, 6, 8), dtype=torch.float32, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((1, 3, 6, 8), dtype=torch.float32, device='cuda:0', low=-2, high=2),
]
fd.validate(inputs)
