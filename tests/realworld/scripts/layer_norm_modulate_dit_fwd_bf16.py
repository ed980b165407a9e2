# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the DiT LayerNorm + modulate block of NVIDIA/Fuser issue #2146 (Thunder,
# `x = ln(x); x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)` with hidden 1024,
# seq 1024, batch 56, bf16): a LayerNorm without affine parameters (var_mean, rsqrt), the
# [B, D] scale and shift unsqueezed with broadcast_in_dim to [B, 1, D], 1 + scale rounded
# to bf16 as eager bf16 arithmetic does, bf16 output; mean and rstd [B, T, 1] returned.
# real-sizes: 3=56 12=1024 32=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[3, 12, 32], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[3, 32], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[3, 32], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[2], correction=0, keepdim=False)
    T6 = fd.ops.broadcast_in_dim(T4, shape=[3, 12, 1], broadcast_dims=[0, 1])
    T7 = fd.ops.broadcast_in_dim(T5, shape=[3, 12, 1], broadcast_dims=[0, 1])
    S8 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T9 = fd.ops.add(T6, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T7, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.sub(T3, T11)
    T13 = fd.ops.broadcast_in_dim(T10, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    T16 = fd.ops.broadcast_in_dim(T1, shape=[3, 1, 32], broadcast_dims=[0, 2])
    T17 = fd.ops.cast(T16, dtype=DataType.Float)
    S18 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T19 = fd.ops.add(S18, T17)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T21 = fd.ops.broadcast_in_dim(T20, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T22 = fd.ops.cast(T15, dtype=DataType.Float)
    T23 = fd.ops.cast(T21, dtype=DataType.Float)
    T24 = fd.ops.mul(T22, T23)
    T25 = fd.ops.broadcast_in_dim(T2, shape=[3, 1, 32], broadcast_dims=[0, 2])
    T26 = fd.ops.broadcast_in_dim(T25, shape=[3, 12, 32], broadcast_dims=[0, 1, 2])
    T27 = fd.ops.cast(T26, dtype=DataType.Float)
    T28 = fd.ops.add(T24, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    fd.add_output(T29)
    fd.add_output(T7)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((3, 12, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3, 32), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
