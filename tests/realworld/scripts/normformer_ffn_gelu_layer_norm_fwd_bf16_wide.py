# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NormFormer's extra FFN LayerNorm (fairseq, ffn_layernorm applied to the GELU
# output before fc2) for a GPT-3 13B sized block (hidden 5120, FFN width 20480) on a short
# batch of 216 tokens: the bf16 fc1 output through tanh-GELU written out in float
# (0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3)))), then a LayerNorm over the
# 20480-wide rows with var_mean and affine bf16 parameters; bf16 output, mean and rstd.
# real-sizes: 9=216 160=20480
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id17(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[9, 160], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[160], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[160], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    S4 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T5 = fd.ops.pow(T3, S4)
    S6 = fd.define_scalar(0.0447150, dtype=DataType.Double)
    T7 = fd.ops.mul(S6, T5)
    T8 = fd.ops.add(T3, T7)
    S9 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T10 = fd.ops.mul(S9, T8)
    T11 = fd.ops.tanh(T10)
    S12 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T13 = fd.ops.add(S12, T11)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.mul(S14, T3)
    T16 = fd.ops.mul(T15, T13)
    T17 = fd.ops.cast(T16, dtype=DataType.BFloat16)
    T18 = fd.ops.cast(T17, dtype=DataType.Float)
    T19, T20 = fd.ops.var_mean(T18, dims=[1], correction=0, keepdim=False)
    T21 = fd.ops.broadcast_in_dim(T19, shape=[9, 1], broadcast_dims=[0])
    T22 = fd.ops.broadcast_in_dim(T20, shape=[9, 1], broadcast_dims=[0])
    S23 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T24 = fd.ops.add(T21, S23)
    T25 = fd.ops.rsqrt(T24)
    T26 = fd.ops.broadcast_in_dim(T22, shape=[9, 160], broadcast_dims=[0, 1])
    T27 = fd.ops.sub(T18, T26)
    T28 = fd.ops.broadcast_in_dim(T25, shape=[9, 160], broadcast_dims=[0, 1])
    T29 = fd.ops.mul(T27, T28)
    T30 = fd.ops.broadcast_in_dim(T1, shape=[9, 160], broadcast_dims=[1])
    T31 = fd.ops.cast(T30, dtype=DataType.Float)
    T32 = fd.ops.mul(T29, T31)
    T33 = fd.ops.broadcast_in_dim(T2, shape=[9, 160], broadcast_dims=[1])
    T34 = fd.ops.cast(T33, dtype=DataType.Float)
    T35 = fd.ops.add(T32, T34)
    T36 = fd.ops.cast(T35, dtype=DataType.BFloat16)
    fd.add_output(T17)
    fd.add_output(T36)
    fd.add_output(T22)
    fd.add_output(T25)


with FusionDefinition() as fd:
    nvfuser_fusion_id17(fd)

inputs = [
    torch.testing.make_tensor((9, 160), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((160,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((160,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
