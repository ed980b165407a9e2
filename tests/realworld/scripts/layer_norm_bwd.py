# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_layernorm_bwd.py (layernorm_bwd_fusion,
# Thunder's decomposition): bf16 grad_out and input with float mean [N] and rstd [N, 1],
# grad_input from per-row sums (two of them sums of [N, 1] tensors over their broadcast
# axis), grad_weight and grad_bias as sums over the rows: the inner-outer persistent case.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T4, dtype=DataType.Float)
    S8 = fd.ops.size(T5, dim=0)
    V8 = fd.define_vector([S8, 1], dtype=DataType.Int)
    T9 = fd.ops.broadcast_in_dim(T2, shape=V8, broadcast_dims=[0])
    V10 = fd.ops.shape(T5)
    T11 = fd.ops.broadcast_in_dim(T9, shape=V10, broadcast_dims=[0, 1])
    T12 = fd.ops.sub(T5, T11)
    T13 = fd.ops.broadcast_in_dim(T3, shape=V10, broadcast_dims=[0, 1])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.broadcast_in_dim(T7, shape=V10, broadcast_dims=[1])
    T16 = fd.ops.sum(T6, dims=[0], keepdim=False, dtype=DataType.Null)
    T17 = fd.ops.mul(T6, T15)
    T18 = fd.ops.mul(T6, T14)
    T19 = fd.ops.sum(T18, dims=[0], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.mul(T17, T13)
    T21 = fd.ops.mul(T17, T12)
    T22 = fd.ops.sum(T21, dims=[1], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.broadcast_in_dim(T22, shape=V8, broadcast_dims=[0])
    T24 = fd.ops.neg(T20)
    T25 = fd.ops.sum(T24, dims=[1], keepdim=False, dtype=DataType.Null)
    T26 = fd.ops.broadcast_in_dim(T25, shape=V8, broadcast_dims=[0])
    S27 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T28 = fd.ops.mul(S27, T23)
    S29 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T30 = fd.ops.pow(T3, S29)
    T31 = fd.ops.mul(T28, T30)
    T32 = fd.ops.sum(T26, dims=[1], keepdim=False, dtype=DataType.Null)
    T33 = fd.ops.sum(T31, dims=[1], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.broadcast_in_dim(T33, shape=V8, broadcast_dims=[0])
    T35 = fd.ops.broadcast_in_dim(T34, shape=V10, broadcast_dims=[0, 1])
    T36 = fd.ops.broadcast_in_dim(T2, shape=V8, broadcast_dims=[0])
    T37 = fd.ops.broadcast_in_dim(T36, shape=V10, broadcast_dims=[0, 1])
    S38 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T39 = fd.ops.mul(S38, T35)
    T40 = fd.ops.sub(T5, T37)
    T41 = fd.ops.mul(T39, T40)
    S41 = fd.ops.size(T5, dim=1)
    T43 = fd.ops.div(T41, S41)
    T44 = fd.ops.broadcast_in_dim(T32, shape=V8, broadcast_dims=[0])
    T45 = fd.ops.broadcast_in_dim(T44, shape=V10, broadcast_dims=[0, 1])
    T46 = fd.ops.div(T45, S41)
    T47 = fd.ops.add(T43, T46)
    T48 = fd.ops.add(T20, T47)
    T49 = fd.ops.cast(T48, dtype=DataType.BFloat16)
    T50 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T51 = fd.ops.cast(T16, dtype=DataType.BFloat16)
    fd.add_output(T49)
    fd.add_output(T50)
    fd.add_output(T51)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((64, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((64, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((64,), dtype=torch.float32, device='cuda:0'),
    torch.randn((64, 1), dtype=torch.float32, device='cuda:0'),
    torch.randn((96,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
