# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_instancenorm_fwd.py (instance norm in
# training mode, as Thunder decomposes it): var_mean over the two spatial dims with
# keepdim=True (correction=0), per-channel weight and bias broadcast to [1, C, 1, 1], and
# the running-stat update: the batch mean of the per-instance means and unbiased variances
# (sum over dim 0, a keepdim=False reduction of keepdim results) blended with momentum 0.1.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id6(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6, T7 = fd.ops.var_mean(T5, dims=[2, 3], correction=0, keepdim=True)
    S8 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T9 = fd.ops.add(T6, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.sub(T5, T7)
    T12 = fd.ops.mul(T11, T10)
    T13 = fd.ops.cast(T1, dtype=DataType.Float)
    T14 = fd.ops.cast(T2, dtype=DataType.Float)
    T15 = fd.ops.broadcast_in_dim(T13, shape=[1, 12, 1, 1], broadcast_dims=[1])
    T16 = fd.ops.broadcast_in_dim(T14, shape=[1, 12, 1, 1], broadcast_dims=[1])
    T17 = fd.ops.mul(T12, T15)
    T18 = fd.ops.add(T17, T16)
    T19 = fd.ops.cast(T18, dtype=DataType.Half)
    T20 = fd.ops.var(T5, dims=[2, 3], correction=1, keepdim=False)
    T21 = fd.ops.sum(T20, dims=[0], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.sum(T7, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    S23 = fd.ops.size(T0, dim=0)
    T24 = fd.ops.div(T21, S23)
    T25 = fd.ops.div(T22, S23)
    S26 = fd.define_scalar(0.100000, dtype=DataType.Double)
    S27 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T28 = fd.ops.mul(T3, S27)
    T29 = fd.ops.mul(T25, S26)
    T30 = fd.ops.add(T28, T29)
    T31 = fd.ops.mul(T4, S27)
    T32 = fd.ops.mul(T24, S26)
    T33 = fd.ops.add(T31, T32)
    fd.add_output(T19)
    fd.add_output(T30)
    fd.add_output(T33)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id6(fd)

inputs = [
    torch.randn((4, 12, 9, 14), dtype=torch.float16, device='cuda:0'),
    torch.randn((12,), dtype=torch.float16, device='cuda:0'),
    torch.randn((12,), dtype=torch.float16, device='cuda:0'),
    torch.zeros((12,), dtype=torch.float32, device='cuda:0'),
    torch.ones((12,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
