# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder forward trace of torch.nn.LayerNorm(4096) on a [2, 2048, 4096]
# bf16 activation (the form of NVIDIA/Fuser issue #1646, in Thunder's later static-shape
# printing): var_mean over the hidden axis with correction=0, mean and rstd broadcast to
# [B, S, 1], affine bf16 weight and bias upcast to float, bf16 output; the float mean and
# rstd [B, S, 1] are outputs too (saved for the backward).
# real-sizes: 20=2048 64=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 20, 64], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[2], correction=0, keepdim=False)
    T6 = fd.ops.broadcast_in_dim(T4, shape=[2, 20, 1], broadcast_dims=[0, 1])
    T7 = fd.ops.broadcast_in_dim(T5, shape=[2, 20, 1], broadcast_dims=[0, 1])
    S8 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T9 = fd.ops.add(T6, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T7, shape=[2, 20, 64], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.sub(T3, T11)
    T13 = fd.ops.broadcast_in_dim(T10, shape=[2, 20, 64], broadcast_dims=[0, 1, 2])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.broadcast_in_dim(T1, shape=[2, 20, 64], broadcast_dims=[2])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.mul(T14, T16)
    T18 = fd.ops.broadcast_in_dim(T2, shape=[2, 20, 64], broadcast_dims=[2])
    T19 = fd.ops.cast(T18, dtype=DataType.Float)
    T20 = fd.ops.add(T17, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T7)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.testing.make_tensor((2, 20, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
