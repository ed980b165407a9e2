# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's layer_norm backward when rematerialization moves the statistics into
# the backward fusion (NVIDIA/Fuser benchmarks/python/test_layernorm_bwd.py computes the same
# grads from saved mean/invstd): var_mean(correction=0) and rsqrt recomputed from the bf16
# input, then grad_input = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)), grad_weight and
# grad_bias as sums over the rows. The 1/H factor is fd.ops.reciprocal of fd.ops.size.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id9(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    T6, T7 = fd.ops.var_mean(T3, dims=[1], correction=0, keepdim=False)
    V8 = T0.shape()
    S9 = fd.ops.size(T0, dim=0)
    V10 = fd.define_vector([S9, 1], dtype=DataType.Int)
    T11 = fd.ops.broadcast_in_dim(T6, shape=V10, broadcast_dims=[0])
    T12 = fd.ops.broadcast_in_dim(T7, shape=V10, broadcast_dims=[0])
    S13 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T14 = fd.ops.add(T11, S13)
    T15 = fd.ops.rsqrt(T14)
    T16 = fd.ops.broadcast_in_dim(T12, shape=V8, broadcast_dims=[0, 1])
    T17 = fd.ops.sub(T3, T16)
    T18 = fd.ops.broadcast_in_dim(T15, shape=V8, broadcast_dims=[0, 1])
    T19 = fd.ops.mul(T17, T18)
    T20 = fd.ops.broadcast_in_dim(T5, shape=V8, broadcast_dims=[1])
    T21 = fd.ops.mul(T4, T20)
    S22 = fd.ops.size(T0, dim=1)
    S23 = fd.ops.reciprocal(S22)
    T24 = fd.ops.sum(T21, dims=[1], keepdim=True, dtype=DataType.Null)
    T25 = fd.ops.mul(T24, S23)
    T26 = fd.ops.mul(T21, T19)
    T27 = fd.ops.sum(T26, dims=[1], keepdim=True, dtype=DataType.Null)
    T28 = fd.ops.mul(T27, S23)
    T29 = fd.ops.sub(T21, T25)
    T30 = fd.ops.mul(T19, T28)
    T31 = fd.ops.sub(T29, T30)
    T32 = fd.ops.mul(T18, T31)
    T33 = fd.ops.mul(T4, T19)
    T34 = fd.ops.sum(T33, dims=[0], keepdim=False, dtype=DataType.Null)
    T35 = fd.ops.sum(T4, dims=[0], keepdim=False, dtype=DataType.Null)
    T36 = fd.ops.cast(T32, dtype=DataType.BFloat16)
    T37 = fd.ops.cast(T34, dtype=DataType.BFloat16)
    T38 = fd.ops.cast(T35, dtype=DataType.BFloat16)
    fd.add_output(T36)
    fd.add_output(T37)
    fd.add_output(T38)


with FusionDefinition() as fd:
    nvfuser_fusion_id9(fd)

inputs = [
    torch.randn((40, 320), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((40, 320), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((320,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
