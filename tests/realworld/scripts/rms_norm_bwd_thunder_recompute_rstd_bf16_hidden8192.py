# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/rmsnorm_thunder_def.py (the Thunder backward of
# F.rms_norm on [2048, 8192] bf16 after rematerialization): rstd recomputed from the input
# in the backward and rounded through bf16 (Thunder saves it in the model dtype), the bf16
# weight broadcast before its upcast, a per-row sum also rounded through bf16, pow(rstd, 3),
# the 1/H factor as reciprocal of a Double; bf16 grad_weight (sum over rows) and grad_input.
# real-sizes: 20=2048 64=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[20, 64], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[20, 64], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T2, dtype=DataType.Float)
    T4 = fd.ops.mul(T3, T3)
    T5 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[20, 1], broadcast_dims=[0])
    S7 = fd.define_scalar(64.0000, dtype=DataType.Double)
    S8 = fd.ops.reciprocal(S7)
    T9 = fd.ops.mul(T6, S8)
    S10 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T11 = fd.ops.add(T9, S10)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.cast(T12, dtype=DataType.BFloat16)
    T14 = fd.ops.broadcast_in_dim(T13, shape=[20, 64], broadcast_dims=[0, 1])
    T15 = fd.ops.cast(T14, dtype=DataType.Float)
    T16 = fd.ops.cast(T0, dtype=DataType.Float)
    T17 = fd.ops.mul(T3, T15)
    T18 = fd.ops.mul(T17, T16)
    T19 = fd.ops.sum(T18, dims=[0], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T21 = fd.ops.broadcast_in_dim(T1, shape=[20, 64], broadcast_dims=[1])
    T22 = fd.ops.cast(T21, dtype=DataType.Float)
    T23 = fd.ops.mul(T22, T16)
    T24 = fd.ops.mul(T15, T23)
    T25 = fd.ops.mul(T3, T23)
    T26 = fd.ops.sum(T25, dims=[1], keepdim=False, dtype=DataType.Null)
    T27 = fd.ops.cast(T26, dtype=DataType.BFloat16)
    T28 = fd.ops.broadcast_in_dim(T27, shape=[20, 1], broadcast_dims=[0])
    T29 = fd.ops.cast(T28, dtype=DataType.Float)
    S30 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T31 = fd.ops.mul(S30, T29)
    S32 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T33 = fd.ops.pow(T12, S32)
    T34 = fd.ops.mul(T31, T33)
    T35 = fd.ops.mul(T34, S8)
    T36 = fd.ops.broadcast_in_dim(T35, shape=[20, 64], broadcast_dims=[0, 1])
    T37 = fd.ops.mul(T3, T36)
    S38 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T39 = fd.ops.mul(S38, T37)
    T40 = fd.ops.add(T24, T39)
    T41 = fd.ops.cast(T40, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T41)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn((20, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((64,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((20, 64), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
