# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Megatron-LM's bias_gelu_back (megatron/core/fusions/fused_bias_gelu.py: the
# derivative 0.5*x*((1 - tanh^2) * (0.79788456 + 0.1070322243*x*x)) + 0.5*(1 + tanh),
# recomputed from the saved pre-bias activation and the bias) as Thunder hands the backward
# of the fc1 epilogue to nvFuser, with the bias gradient reduced in the same fusion: the
# sequence-first [S, B, 4H] grad times the derivative in float, bf16 out, and its sum over
# sequence and batch as the [4H] bias grad.
# real-sizes: 24=16384 13=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 2, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[13, 2, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T7 = fd.ops.broadcast_in_dim(T2, shape=[13, 2, 24], broadcast_dims=[2])
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.cast(T1, dtype=DataType.Float)
    T10 = fd.ops.add(T8, T9)
    S11 = fd.define_scalar(0.79788, dtype=DataType.Double)
    S12 = fd.define_scalar(0.04471, dtype=DataType.Double)
    S13 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S14 = fd.define_scalar(0.50000, dtype=DataType.Double)
    T15 = fd.ops.mul(T10, S11)
    T16 = fd.ops.mul(T10, S12)
    T17 = fd.ops.mul(T16, T10)
    T18 = fd.ops.add(S13, T17)
    T19 = fd.ops.mul(T15, T18)
    T20 = fd.ops.tanh(T19)
    S21 = fd.define_scalar(0.10703, dtype=DataType.Double)
    T22 = fd.ops.mul(T20, T20)
    T23 = fd.ops.sub(S13, T22)
    T24 = fd.ops.mul(T10, S21)
    T25 = fd.ops.mul(T24, T10)
    T26 = fd.ops.add(S11, T25)
    T27 = fd.ops.mul(T10, S14)
    T28 = fd.ops.mul(T23, T26)
    T29 = fd.ops.mul(T27, T28)
    T30 = fd.ops.add(S13, T20)
    T31 = fd.ops.mul(S14, T30)
    T32 = fd.ops.add(T29, T31)
    T33 = fd.ops.cast(T0, dtype=DataType.Float)
    T34 = fd.ops.mul(T32, T33)
    T35 = fd.ops.sum(T34, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T36 = fd.ops.cast(T34, dtype=DataType.BFloat16)
    T37 = fd.ops.cast(T35, dtype=DataType.BFloat16)
    fd.add_output(T36)
    fd.add_output(T37)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 2, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 2, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
