# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of the DiT LayerNorm + modulate block whose 1034 us backward
# NVIDIA/Fuser issue #2146 reports (hidden 1024, seq 1024, batch 56, bf16): from the saved
# mean and rstd [B, T, 1], grad_shift and grad_scale are sums over the sequence axis
# ([B, T, D] -> [B, D]), the modulated gradient g * (1 + scale) goes through the
# affine-free LayerNorm backward (two sums over the hidden axis); three bf16 outputs.
# real-sizes: 3=56 12=1024 32=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 12, 32], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[3, 12, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[3, 12, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[3, 32], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[3, 12, 32], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.ops.cast(T4, dtype=DataType.Float)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.cast(T6, dtype=DataType.BFloat16)
    T8 = fd.ops.cast(T0, dtype=DataType.Float)
    T9 = fd.ops.broadcast_in_dim(T1, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T10 = fd.ops.sub(T8, T9)
    T11 = fd.ops.broadcast_in_dim(T2, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.mul(T10, T11)
    T13 = fd.ops.mul(T5, T12)
    T14 = fd.ops.sum(T13, dims=[1], keepdim=False, dtype=DataType.Null)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    T16 = fd.ops.cast(T3, dtype=DataType.Float)
    S17 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T18 = fd.ops.add(S17, T16)
    T19 = fd.ops.broadcast_in_dim(T18, shape=[3, 12, 32], broadcast_dims=[0, 2])
    T20 = fd.ops.mul(T5, T19)
    T21 = fd.ops.sum(T20, dims=[2], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.broadcast_in_dim(T21, shape=[3, 12, 1], broadcast_dims=[0, 1])
    T23 = fd.ops.mul(T20, T12)
    T24 = fd.ops.sum(T23, dims=[2], keepdim=False, dtype=DataType.Null)
    T25 = fd.ops.broadcast_in_dim(T24, shape=[3, 12, 1], broadcast_dims=[0, 1])
    S26 = fd.define_scalar(32.0000, dtype=DataType.Double)
    T27 = fd.ops.div(T22, S26)
    T28 = fd.ops.div(T25, S26)
    T29 = fd.ops.broadcast_in_dim(T27, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T30 = fd.ops.broadcast_in_dim(T28, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T31 = fd.ops.sub(T20, T29)
    T32 = fd.ops.mul(T12, T30)
    T33 = fd.ops.sub(T31, T32)
    T34 = fd.ops.mul(T33, T11)
    T35 = fd.ops.cast(T34, dtype=DataType.BFloat16)
    fd.add_output(T35)
    fd.add_output(T15)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.testing.make_tensor((3, 12, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((3, 12, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((3, 12, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.testing.make_tensor((3, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3, 12, 32), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
