# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of GroupNorm(32, 320, eps=1e-5) + SiLU in a Stable Diffusion
# UNet ResnetBlock2D (fp16, [2, 320, 64, 64]): the input reshaped to [N, G, C/G * H * W]
# (one flat reduction axis per group), var_mean over it, the normalized values reshaped back
# to [N, C, H, W] before the per-channel affine step, then x * sigmoid(x) and an fp16
# cast; mean and rstd [N, G] returned for the backward.
# real-sizes: 12=320 4=32 3=10 5=64 6=64
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id10(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 12, 5, 6], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[12], contiguity=[True], dtype=DataType.Half, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[12], contiguity=[True], dtype=DataType.Half, is_cpu=False, stride_order=[0])
    T3 = fd.ops.reshape(T0, new_shape=[2, 4, 90])
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    T5, T6 = fd.ops.var_mean(T4, dims=[2], correction=0, keepdim=False)
    T7 = fd.ops.broadcast_in_dim(T5, shape=[2, 4, 1], broadcast_dims=[0, 1])
    T8 = fd.ops.broadcast_in_dim(T6, shape=[2, 4, 1], broadcast_dims=[0, 1])
    S9 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T10 = fd.ops.add(T7, S9)
    T11 = fd.ops.rsqrt(T10)
    T12 = fd.ops.broadcast_in_dim(T8, shape=[2, 4, 90], broadcast_dims=[0, 1, 2])
    T13 = fd.ops.sub(T4, T12)
    T14 = fd.ops.broadcast_in_dim(T11, shape=[2, 4, 90], broadcast_dims=[0, 1, 2])
    T15 = fd.ops.mul(T13, T14)
    T16 = fd.ops.reshape(T15, new_shape=[2, 12, 5, 6])
    T17 = fd.ops.broadcast_in_dim(T1, shape=[2, 12, 5, 6], broadcast_dims=[1])
    T18 = fd.ops.cast(T17, dtype=DataType.Float)
    T19 = fd.ops.mul(T16, T18)
    T20 = fd.ops.broadcast_in_dim(T2, shape=[2, 12, 5, 6], broadcast_dims=[1])
    T21 = fd.ops.cast(T20, dtype=DataType.Float)
    T22 = fd.ops.add(T19, T21)
    T23 = fd.ops.neg(T22)
    T24 = fd.ops.exp(T23)
    S25 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T26 = fd.ops.add(S25, T24)
    T27 = fd.ops.reciprocal(T26)
    T28 = fd.ops.mul(T22, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.Half)
    T30 = fd.ops.squeeze(T8, dims=[2])
    T31 = fd.ops.squeeze(T11, dims=[2])
    fd.add_output(T29)
    fd.add_output(T30)
    fd.add_output(T31)


with FusionDefinition() as fd:
    nvfuser_fusion_id10(fd)

inputs = [
    torch.testing.make_tensor((2, 12, 5, 6), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((12,), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((12,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
