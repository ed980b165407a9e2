# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_groupnorm_fwd.py (groupnorm_fwd_fusion):
# [N, C, H, W] bf16 reshaped to [N, G, C/G, H, W] with C/G as fd.ops.div of a size scalar by
# an Int scalar inside define_vector (mixed Python ints and scalars), var_mean over three
# dims (correction=0), rsqrt, weight and bias reshaped to [1, G, C/G, 1, 1], the result
# reshaped back to the input's shape (T0.shape()); mean and rstd are outputs as well.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    V3 = T0.shape()
    S4 = fd.define_scalar(4, dtype=DataType.Int)
    S5 = fd.ops.div(T0.size(1), S4)
    V6 = fd.define_vector([T0.size(0), 4, S5, T0.size(2), T0.size(3)], dtype=DataType.Int)
    T7 = fd.ops.reshape(T0, new_shape=V6)
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.cast(T1, dtype=DataType.Float)
    T10 = fd.ops.cast(T2, dtype=DataType.Float)
    T11, T12 = fd.ops.var_mean(T8, dims=[2, 3, 4], correction=0, keepdim=False)
    V13 = fd.define_vector([T0.size(0), 4, 1, 1, 1], dtype=DataType.Int)
    T14 = fd.ops.broadcast_in_dim(T11, shape=V13, broadcast_dims=[0, 1])
    T15 = fd.ops.broadcast_in_dim(T12, shape=V13, broadcast_dims=[0, 1])
    S16 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T17 = fd.ops.add(T14, S16)
    T18 = fd.ops.rsqrt(T17)
    V19 = T8.shape()
    T20 = fd.ops.broadcast_in_dim(T15, shape=V19, broadcast_dims=[0, 1, 2, 3, 4])
    T21 = fd.ops.sub(T8, T20)
    T22 = fd.ops.broadcast_in_dim(T18, shape=V19, broadcast_dims=[0, 1, 2, 3, 4])
    T23 = fd.ops.mul(T21, T22)
    S24 = fd.ops.div(T1.size(0), S4)
    V25 = fd.define_vector([1, 4, S24, 1, 1], dtype=DataType.Int)
    T26 = fd.ops.reshape(T9, new_shape=V25)
    S27 = fd.ops.div(T2.size(0), S4)
    V28 = fd.define_vector([1, 4, S27, 1, 1], dtype=DataType.Int)
    T29 = fd.ops.reshape(T10, new_shape=V28)
    T30 = fd.ops.broadcast_in_dim(T26, shape=V19, broadcast_dims=[0, 1, 2, 3, 4])
    T31 = fd.ops.mul(T23, T30)
    T32 = fd.ops.broadcast_in_dim(T29, shape=V19, broadcast_dims=[0, 1, 2, 3, 4])
    T33 = fd.ops.add(T31, T32)
    T34 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    T35 = fd.ops.reshape(T34, new_shape=V3)
    fd.add_output(T35)
    fd.add_output(T15)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((3, 16, 10, 12), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((16,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((16,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
