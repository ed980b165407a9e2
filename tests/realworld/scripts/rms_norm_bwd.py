# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_rmsnorm_bwd.py (rmsnorm_bwd_fusion):
# input, rms [N, 1] (sqrt(mean(x^2) + eps), float), grad_out and weight; grad_input from
# one per-row sum (then a sum of an [N, 1] tensor over its broadcast axis), grad_weight
# as a sum over the rows. float32 at an odd size: rows that do not fill the last step.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    S4 = fd.define_scalar(2.00000, dtype=DataType.Double)
    V5 = fd.ops.shape(T0)
    T6 = fd.ops.broadcast_in_dim(T1, shape=V5, broadcast_dims=[0, 1])
    T7 = fd.ops.reciprocal(T6)
    T8 = fd.ops.mul(T0, T7)
    T9 = fd.ops.broadcast_in_dim(T3, shape=V5, broadcast_dims=[1])
    T10 = fd.ops.mul(T2, T8)
    T11 = fd.ops.mul(T2, T9)
    T12 = fd.ops.sum(T10, dims=[0], keepdim=False, dtype=DataType.Null)
    T13 = fd.ops.mul(T11, T7)
    T14 = fd.ops.neg(T11)
    T15 = fd.ops.mul(T14, T0)
    T16 = fd.ops.pow(T6, S4)
    T17 = fd.ops.reciprocal(T16)
    T18 = fd.ops.mul(T15, T17)
    T19 = fd.ops.sum(T18, dims=[1], keepdim=False, dtype=DataType.Null)
    S20 = fd.ops.size(T0, dim=0)
    V21 = fd.define_vector([S20, 1], dtype=DataType.Int)
    T22 = fd.ops.broadcast_in_dim(T19, shape=V21, broadcast_dims=[0])
    T23 = fd.ops.mul(S4, T1)
    T24 = fd.ops.reciprocal(T23)
    T25 = fd.ops.mul(T22, T24)
    S26 = fd.ops.size(T0, dim=1)
    T27 = fd.ops.div(T25, S26)
    T28 = fd.ops.sum(T27, dims=[1], keepdim=False, dtype=DataType.Null)
    T29 = fd.ops.broadcast_in_dim(T28, shape=V21, broadcast_dims=[0])
    T30 = fd.ops.broadcast_in_dim(T29, shape=V5, broadcast_dims=[0, 1])
    T31 = fd.ops.mul(T30, S4)
    T32 = fd.ops.mul(T31, T0)
    T33 = fd.ops.add(T13, T32)
    fd.add_output(T33)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn((1000, 33), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1000, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.randn((1000, 33), dtype=torch.float32, device='cuda:0'),
    torch.randn((33,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
