# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/test_high_complexity.py
# test_prim_layer_norm_fwd (layer norm written in primitives, as torch._refs would): mean
# as sum(keepdim=True) divided by an Int define_scalar of the normalized size, the variance
# as the mean of (x - mean)^2 the same way, rsqrt(var + 1e-12), weight and bias broadcast
# to the input's shape with broadcast_in_dim over the last axis; outputs the normalized
# tensor, the mean and invstd with their keepdim shapes. Shrunk from [64, 128, 1024] to
# [4, 16, 256].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T3 = fd.ops.sum(T0, dims=[2], keepdim=True)
    S4 = fd.define_scalar(256)
    T5 = fd.ops.div(T3, S4)
    T6 = fd.ops.sub(T0, T5)
    T7 = fd.ops.mul(T6, T6)
    T8 = fd.ops.sum(T7, dims=[2], keepdim=True)
    T9 = fd.ops.div(T8, S4)
    S10 = fd.define_scalar(1e-12)
    T11 = fd.ops.add(T9, S10)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.mul(T6, T12)
    T14 = fd.ops.broadcast_in_dim(T1, shape=[4, 16, 256], broadcast_dims=[2])
    T15 = fd.ops.mul(T13, T14)
    T16 = fd.ops.broadcast_in_dim(T2, shape=[4, 16, 256], broadcast_dims=[2])
    T17 = fd.ops.add(T15, T16)
    fd.add_output(T17)
    fd.add_output(T5)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn(4, 16, 256, device="cuda"),
    torch.randn(256, device="cuda"),
    torch.randn(256, device="cuda"),
]
fd.execute(inputs)
