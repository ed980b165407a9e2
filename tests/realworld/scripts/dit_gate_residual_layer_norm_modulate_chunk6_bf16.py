# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of the middle of a DiT-XL/2 block (facebookresearch/DiT
# models.py: adaLN_modulation(c).chunk(6, dim=1), then x = x + gate_msa.unsqueeze(1) * attn
# and modulate(norm2(x), shift_mlp, scale_mlp)), as in NVIDIA/Fuser issue #2146: the
# [B, 6D] conditioning sliced into its chunks with fd.ops.slice, the gated residual add
# rounded to bf16 (returned as the new residual stream), an affine-free LayerNorm
# (eps 1e-6) and x * (1 + scale) + shift; D = 1152, T = 256 tokens.
# real-sizes: 16=256 36=1152
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 216], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[2, 16, 36], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 16, 36], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.ops.slice(T0, start_indices=[0, 72], end_indices=[2, 108], strides=[1, 1], manual_normalization=0)
    T4 = fd.ops.slice(T0, start_indices=[0, 108], end_indices=[2, 144], strides=[1, 1], manual_normalization=0)
    T5 = fd.ops.slice(T0, start_indices=[0, 144], end_indices=[2, 180], strides=[1, 1], manual_normalization=0)
    T6 = fd.ops.broadcast_in_dim(T3, shape=[2, 1, 36], broadcast_dims=[0, 2])
    T7 = fd.ops.broadcast_in_dim(T6, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.cast(T2, dtype=DataType.Float)
    T10 = fd.ops.mul(T8, T9)
    T11 = fd.ops.cast(T10, dtype=DataType.BFloat16)
    T12 = fd.ops.cast(T1, dtype=DataType.Float)
    T13 = fd.ops.cast(T11, dtype=DataType.Float)
    T14 = fd.ops.add(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17, T18 = fd.ops.var_mean(T16, dims=[2], correction=0, keepdim=False)
    T19 = fd.ops.broadcast_in_dim(T17, shape=[2, 16, 1], broadcast_dims=[0, 1])
    T20 = fd.ops.broadcast_in_dim(T18, shape=[2, 16, 1], broadcast_dims=[0, 1])
    S21 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T22 = fd.ops.add(T19, S21)
    T23 = fd.ops.rsqrt(T22)
    T24 = fd.ops.broadcast_in_dim(T20, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    T25 = fd.ops.sub(T16, T24)
    T26 = fd.ops.broadcast_in_dim(T23, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    T27 = fd.ops.mul(T25, T26)
    T28 = fd.ops.cast(T27, dtype=DataType.BFloat16)
    T29 = fd.ops.broadcast_in_dim(T5, shape=[2, 1, 36], broadcast_dims=[0, 2])
    T30 = fd.ops.cast(T29, dtype=DataType.Float)
    S31 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T32 = fd.ops.add(S31, T30)
    T33 = fd.ops.broadcast_in_dim(T32, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    T34 = fd.ops.cast(T28, dtype=DataType.Float)
    T35 = fd.ops.mul(T34, T33)
    T36 = fd.ops.broadcast_in_dim(T4, shape=[2, 1, 36], broadcast_dims=[0, 2])
    T37 = fd.ops.broadcast_in_dim(T36, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    T38 = fd.ops.cast(T37, dtype=DataType.Float)
    T39 = fd.ops.add(T35, T38)
    T40 = fd.ops.cast(T39, dtype=DataType.BFloat16)
    fd.add_output(T15)
    fd.add_output(T40)
    fd.add_output(T20)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.testing.make_tensor((2, 216), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 16, 36), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 16, 36), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
