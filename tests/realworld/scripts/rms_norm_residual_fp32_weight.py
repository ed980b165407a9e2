# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/llama_inf_tests/graph_2.py (Llama decoder residual
# add + RMSNorm as Thunder hands it over) with the float32 weight of
# benchmarks/python/test_rmsnorm_fwd_weightfp32.py: bf16 hidden state and residual with a
# static leading 1, pow(x, 2), a row sum times reciprocal(H) computed on a scalar
# (fd.ops.reciprocal of a define_scalar), rsqrt, an fp32 weight; bf16 outputs.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 6, 256], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 6, 256], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[256], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.add(T3, T4)
    S6 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T7 = fd.ops.pow(T5, S6)
    T8 = fd.ops.sum(T7, dims=[2], keepdim=False, dtype=DataType.Null)
    T9 = fd.ops.broadcast_in_dim(T8, shape=[1, 6, 1], broadcast_dims=[0, 1])
    S10 = fd.define_scalar(256.000, dtype=DataType.Double)
    S11 = fd.ops.reciprocal(S10)
    T12 = fd.ops.mul(T9, S11)
    S13 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T14 = fd.ops.add(T12, S13)
    T15 = fd.ops.rsqrt(T14)
    T16 = fd.ops.broadcast_in_dim(T15, shape=[1, 6, 256], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.mul(T5, T16)
    T18 = fd.ops.broadcast_in_dim(T2, shape=[1, 6, 256], broadcast_dims=[2])
    T19 = fd.ops.mul(T18, T17)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T21 = fd.ops.cast(T5, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T21)
    fd.add_output(T15)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((1, 6, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 6, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((256,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
