# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF's _compute_llama3_parameters (Llama-3.1 rope scaling: factor 8, low/high
# frequency factors 1 and 4, original context 8192) followed by LlamaRotaryEmbedding's
# forward, as a Thunder trace hands the whole table computation to nvFuser (cf. NVIDIA/Fuser
# tests/python/llama_inf_tests/graph_1.py, whose rotary angles are built in the fusion):
# inv_freq = 1 / 500000 ** (iota(0, D, 2) / D), the wavelength 2*pi / inv_freq, a
# where-chain (long wavelengths divided by the factor, medium ones smoothly interpolated,
# selected with bitwise_not / bitwise_and of two comparisons), positions from iota, their
# outer product with the scaled inv_freq, cat, cos/sin times the attention scaling, bf16
# [1, S, D] out; no tensor inputs.
# real-sizes: 29=8192 16=128 8=64
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(8, dtype=DataType.Int)
    S1 = fd.define_scalar(0, dtype=DataType.Int)
    S2 = fd.define_scalar(2, dtype=DataType.Int)
    T3 = fd.ops.iota(S0, S1, S2, dtype=DataType.Int)
    T4 = fd.ops.cast(T3, dtype=DataType.Float)
    S5 = fd.define_scalar(16, dtype=DataType.Int)
    T6 = fd.ops.div(T4, S5)
    S7 = fd.define_scalar(500000.000, dtype=DataType.Double)
    T8 = fd.ops.pow(S7, T6)
    T9 = fd.ops.reciprocal(T8)
    S10 = fd.define_scalar(6.28319, dtype=DataType.Double)
    T11 = fd.ops.div(S10, T9)
    S12 = fd.define_scalar(8192.000, dtype=DataType.Double)
    S13 = fd.define_scalar(2048.000, dtype=DataType.Double)
    S14 = fd.define_scalar(8.00000, dtype=DataType.Double)
    T15 = fd.ops.gt(T11, S12)
    T16 = fd.ops.div(T9, S14)
    T17 = fd.ops.where(T15, T16, T9)
    S18 = fd.define_scalar(8192.000, dtype=DataType.Double)
    T19 = fd.ops.div(S18, T11)
    S20 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T21 = fd.ops.sub(T19, S20)
    S22 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T23 = fd.ops.div(T21, S22)
    T24 = fd.ops.sub(S20, T23)
    T25 = fd.ops.mul(T24, T17)
    T26 = fd.ops.div(T25, S14)
    T27 = fd.ops.mul(T23, T17)
    T28 = fd.ops.add(T26, T27)
    T29 = fd.ops.lt(T11, S13)
    T30 = fd.ops.bitwise_not(T29)
    T31 = fd.ops.gt(T11, S12)
    T32 = fd.ops.bitwise_not(T31)
    T33 = fd.ops.bitwise_and(T30, T32)
    T34 = fd.ops.where(T33, T28, T17)
    S35 = fd.define_scalar(29, dtype=DataType.Int)
    S36 = fd.define_scalar(0, dtype=DataType.Int)
    S37 = fd.define_scalar(1, dtype=DataType.Int)
    T38 = fd.ops.iota(S35, S36, S37, dtype=DataType.Int)
    T39 = fd.ops.cast(T38, dtype=DataType.Float)
    T43 = fd.ops.broadcast_in_dim(T39, shape=[29, 8], broadcast_dims=[0])
    T47 = fd.ops.broadcast_in_dim(T34, shape=[29, 8], broadcast_dims=[1])
    T48 = fd.ops.mul(T43, T47)
    T49 = fd.ops.cat([T48, T48], dim=-1, manual_padding=0)
    T50 = fd.ops.cos(T49)
    T51 = fd.ops.sin(T49)
    S52 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T53 = fd.ops.mul(T50, S52)
    T54 = fd.ops.mul(T51, S52)
    T55 = fd.ops.cast(T53, dtype=DataType.BFloat16)
    T56 = fd.ops.cast(T54, dtype=DataType.BFloat16)
    T61 = fd.ops.broadcast_in_dim(T55, shape=[1, 29, 16], broadcast_dims=[1, 2])
    T66 = fd.ops.broadcast_in_dim(T56, shape=[1, 29, 16], broadcast_dims=[1, 2])
    fd.add_output(T61)
    fd.add_output(T66)
    fd.add_output(T34)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [

]
fd.execute(inputs)
