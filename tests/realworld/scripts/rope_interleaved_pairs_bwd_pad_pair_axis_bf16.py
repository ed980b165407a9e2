# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward Thunder derives for the real-valued interleaved rotary embedding
# (Meta Llama's apply_rotary_emb on [.., D/2, 2] pairs; cf. NVIDIA/Fuser test_repro.py
# test_issue1953, an interleaved RoPE backward): the output grad [B, H, S, D] transposed
# back to [B, S, H, D], cast to float, reshaped to pairs and split by slice + squeeze; the
# transposed rotation (re: g_re*cos + g_im*sin, im: g_im*cos - g_re*sin) with cos/sin
# [S, D/2]; the backward of the stack as a broadcast to a trailing size-1 axis and pads of
# the pair axis by (0, 1) and (1, 0), summed and reshaped to [B, S, H, D], bf16 out.
# real-sizes: 16=128 13=2048 8=64 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 5, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    T11 = fd.ops.reshape(T4, new_shape=[1, 13, 5, 8, 2])
    T30 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0, 0], end_indices=[1, 13, 5, 8, 1], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T31 = fd.ops.squeeze(T30, dims=[4])
    T50 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0, 1], end_indices=[1, 13, 5, 8, 2], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T51 = fd.ops.squeeze(T50, dims=[4])
    T57 = fd.ops.broadcast_in_dim(T1, shape=[1, 13, 5, 8], broadcast_dims=[1, 3])
    T58 = fd.ops.cast(T57, dtype=DataType.Float)
    T64 = fd.ops.broadcast_in_dim(T2, shape=[1, 13, 5, 8], broadcast_dims=[1, 3])
    T65 = fd.ops.cast(T64, dtype=DataType.Float)
    T66 = fd.ops.mul(T31, T58)
    T67 = fd.ops.mul(T51, T65)
    T68 = fd.ops.add(T66, T67)
    T69 = fd.ops.mul(T31, T65)
    T70 = fd.ops.neg(T69)
    T71 = fd.ops.mul(T51, T58)
    T72 = fd.ops.add(T70, T71)
    T79 = fd.ops.broadcast_in_dim(T68, shape=[1, 13, 5, 8, 1], broadcast_dims=[0, 1, 2, 3])
    T86 = fd.ops.broadcast_in_dim(T72, shape=[1, 13, 5, 8, 1], broadcast_dims=[0, 1, 2, 3])
    S87 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T99 = fd.ops.pad(T79, [0, 1, 0, 0, 0, 0, 0, 0, 0, 0], S87)
    T111 = fd.ops.pad(T86, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], S87)
    T112 = fd.ops.add(T99, T111)
    T118 = fd.ops.reshape(T112, new_shape=[1, 13, 5, 16])
    T119 = fd.ops.cast(T118, dtype=DataType.BFloat16)
    fd.add_output(T119)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 5, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
