# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder dynamic-shape traces (2024-2025) that compute normalisation factors
# on symbolic scalars: casts of sizes (fd.ops.cast(S, dtype=DataType.Double)), unary ops
# on sizes and runtime scalar inputs (reciprocal, neg, rsqrt), scalar-only div/mul, and
# the Tensor method forms T.size(d), T.shape() and T.ndim.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    S3 = T0.size(1)
    S4 = fd.ops.cast(S3, dtype=DataType.Double)
    S5 = fd.ops.reciprocal(S4)
    T6 = fd.ops.sum(T2, dims=[T0.ndim - 1], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.mul(T6, S5)
    V8 = T0.shape()
    T9 = fd.ops.broadcast_in_dim(T7, shape=V8, broadcast_dims=[0])
    T10 = fd.ops.sub(T2, T9)
    S11 = fd.ops.neg(S1)
    S12 = fd.ops.rsqrt(fd.ops.abs(S1))
    S13 = fd.ops.mul(S11, S12)
    S14 = fd.ops.size(T0, dim=0)
    S15 = fd.ops.div(S13, S14)
    T16 = fd.ops.mul(T10, S15)
    T17 = fd.ops.cast(T16, dtype=DataType.BFloat16)
    fd.add_output(T17)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.testing.make_tensor((16, 96), dtype=torch.bfloat16, device='cuda:0'),
    0.125,
]
fd.execute(inputs)
