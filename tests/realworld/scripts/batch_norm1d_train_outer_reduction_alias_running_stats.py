# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of nn.BatchNorm1d(1024) in training on a [B, 1024] float32
# MLP activation (the tabular / DLRM-style case): the statistics are an outer reduction over
# the batch axis (var_mean over dim 0, keepdim=False), the running mean and the running
# variance (blended with the unbiased batch variance, via the batch-size Int scalar) are
# written back with add_output(..., alias_input=...); output, mean and invstd returned.
# real-sizes: 40=8192 24=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T5, T6 = fd.ops.var_mean(T0, dims=[0], correction=0, keepdim=False)
    S7 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T8 = fd.ops.add(T5, S7)
    T9 = fd.ops.rsqrt(T8)
    V10 = fd.define_vector([1, T0.size(1)], dtype=DataType.Int)
    T11 = fd.ops.broadcast_in_dim(T6, shape=V10, broadcast_dims=[1])
    T12 = fd.ops.broadcast_in_dim(T9, shape=V10, broadcast_dims=[1])
    V13 = T0.shape()
    T14 = fd.ops.broadcast_in_dim(T11, shape=V13, broadcast_dims=[0, 1])
    T15 = fd.ops.sub(T0, T14)
    T16 = fd.ops.broadcast_in_dim(T12, shape=V13, broadcast_dims=[0, 1])
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.broadcast_in_dim(T1, shape=V13, broadcast_dims=[1])
    T19 = fd.ops.mul(T17, T18)
    T20 = fd.ops.broadcast_in_dim(T2, shape=V13, broadcast_dims=[1])
    T21 = fd.ops.add(T19, T20)
    S22 = fd.define_scalar(0.100000, dtype=DataType.Double)
    S23 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T24 = fd.ops.mul(T3, S23)
    T25 = fd.ops.mul(T6, S22)
    T26 = fd.ops.add(T24, T25)
    S27 = fd.ops.size(T0, dim=0)
    S28 = fd.define_scalar(1, dtype=DataType.Int)
    S29 = fd.ops.sub(S27, S28)
    T30 = fd.ops.mul(T5, S27)
    T31 = fd.ops.div(T30, S29)
    T32 = fd.ops.mul(T4, S23)
    T33 = fd.ops.mul(T31, S22)
    T34 = fd.ops.add(T32, T33)
    fd.add_output(T26, alias_input=T3)
    fd.add_output(T34, alias_input=T4)
    fd.add_output(T21)
    fd.add_output(T6)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((40, 24), dtype=torch.float32, device='cuda:0'),
    torch.randn((24,), dtype=torch.float32, device='cuda:0'),
    torch.randn((24,), dtype=torch.float32, device='cuda:0'),
    torch.zeros((24,), dtype=torch.float32, device='cuda:0'),
    torch.ones((24,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
