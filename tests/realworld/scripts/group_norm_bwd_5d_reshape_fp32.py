# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of GroupNorm(32, 320) in a Stable Diffusion UNet ResnetBlock
# ([2, 320, 64, 64], float32 training) as Thunder decomposes it, in the reshape form of
# NVIDIA/Fuser benchmarks/python/test_groupnorm_fwd.py: input and grad reshaped to
# [N, G, C/G, H, W], the saved mean and rstd [N, G] broadcast over the group, the weight
# reshaped to [1, G, C/G, 1, 1]; per-group sums over [2, 3, 4] for grad_input, sums over
# [0, 3, 4] for grad_weight and grad_bias, grad_input reshaped back to [N, C, H, W].
# real-sizes: 12=320 4=32 3=10 5=64 6=64
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id6(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T5 = fd.ops.reshape(T0, new_shape=[2, 4, 3, 5, 6])
    T6 = fd.ops.reshape(T1, new_shape=[2, 4, 3, 5, 6])
    T7 = fd.ops.broadcast_in_dim(T2, shape=[2, 4, 3, 5, 6], broadcast_dims=[0, 1])
    T8 = fd.ops.broadcast_in_dim(T3, shape=[2, 4, 3, 5, 6], broadcast_dims=[0, 1])
    T9 = fd.ops.sub(T5, T7)
    T10 = fd.ops.mul(T9, T8)
    T11 = fd.ops.reshape(T4, new_shape=[1, 4, 3, 1, 1])
    T12 = fd.ops.broadcast_in_dim(T11, shape=[2, 4, 3, 5, 6], broadcast_dims=[0, 1, 2, 3, 4])
    T13 = fd.ops.mul(T6, T10)
    T14 = fd.ops.sum(T13, dims=[0, 3, 4], keepdim=False, dtype=DataType.Null)
    T15 = fd.ops.reshape(T14, new_shape=[12])
    T16 = fd.ops.sum(T6, dims=[0, 3, 4], keepdim=False, dtype=DataType.Null)
    T17 = fd.ops.reshape(T16, new_shape=[12])
    T18 = fd.ops.mul(T6, T12)
    T19 = fd.ops.sum(T18, dims=[2, 3, 4], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.mul(T18, T10)
    T21 = fd.ops.sum(T20, dims=[2, 3, 4], keepdim=False, dtype=DataType.Null)
    S22 = fd.define_scalar(90.0000, dtype=DataType.Double)
    S23 = fd.ops.reciprocal(S22)
    T24 = fd.ops.mul(T19, S23)
    T25 = fd.ops.mul(T21, S23)
    T26 = fd.ops.broadcast_in_dim(T24, shape=[2, 4, 3, 5, 6], broadcast_dims=[0, 1])
    T27 = fd.ops.broadcast_in_dim(T25, shape=[2, 4, 3, 5, 6], broadcast_dims=[0, 1])
    T28 = fd.ops.sub(T18, T26)
    T29 = fd.ops.mul(T10, T27)
    T30 = fd.ops.sub(T28, T29)
    T31 = fd.ops.mul(T30, T8)
    T32 = fd.ops.reshape(T31, new_shape=[2, 12, 5, 6])
    fd.add_output(T32)
    fd.add_output(T15)
    fd.add_output(T17)


with FusionDefinition() as fd:
    nvfuser_fusion_id6(fd)

inputs = [
    torch.randn((2, 12, 5, 6), dtype=torch.float32, device='cuda:0'),
    torch.randn((2, 12, 5, 6), dtype=torch.float32, device='cuda:0'),
    torch.randn((2, 4), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 4), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.randn((12,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
