# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_adaptive_layernorm_host.py
# (adaptive_layernorm_fwd_fusion, B=1..2, T=30K, D=1024, fp16): sizes written as
# `T0.size(k)` inside shape lists, var_mean over the last axis, eps 1e-6, the [B, D] scale
# and shift turned into [B, 1, D] with fd.ops.reshape (not broadcast_in_dim), 1 + scale
# rounded through fp16, broadcasts to T0.shape(); mean, invstd and the fp16 output returned.
# real-sizes: 20=30720 32=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, dims=[2], correction=0, keepdim=False)
    T6 = fd.ops.broadcast_in_dim(T4, shape=[T0.size(0), T0.size(1), 1], broadcast_dims=[0, 1])
    T7 = fd.ops.broadcast_in_dim(T5, shape=[T0.size(0), T0.size(1), 1], broadcast_dims=[0, 1])
    S8 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T9 = fd.ops.add(T6, S8)
    T10 = fd.ops.broadcast_in_dim(T7, shape=T0.shape(), broadcast_dims=[0, 1, 2])
    T11 = fd.ops.rsqrt(T9)
    T12 = fd.ops.sub(T3, T10)
    T13 = fd.ops.broadcast_in_dim(T11, shape=T0.shape(), broadcast_dims=[0, 1, 2])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.reshape(T1, new_shape=[T1.size(0), 1, T1.size(1)])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    S17 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T18 = fd.ops.add(S17, T16)
    T19 = fd.ops.cast(T18, dtype=DataType.Half)
    T20 = fd.ops.broadcast_in_dim(T19, shape=T0.shape(), broadcast_dims=[0, 1, 2])
    T21 = fd.ops.cast(T20, dtype=DataType.Float)
    T22 = fd.ops.mul(T14, T21)
    T23 = fd.ops.reshape(T2, new_shape=[T2.size(0), 1, T2.size(1)])
    T24 = fd.ops.broadcast_in_dim(T23, shape=T0.shape(), broadcast_dims=[0, 1, 2])
    T25 = fd.ops.cast(T24, dtype=DataType.Float)
    T26 = fd.ops.add(T22, T25)
    T27 = fd.ops.cast(T26, dtype=DataType.Half)
    fd.add_output(T5)
    fd.add_output(T11)
    fd.add_output(T27)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((2, 20, 32), dtype=torch.float16, device='cuda:0'),
    torch.randn((2, 32), dtype=torch.float16, device='cuda:0'),
    torch.randn((2, 32), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
