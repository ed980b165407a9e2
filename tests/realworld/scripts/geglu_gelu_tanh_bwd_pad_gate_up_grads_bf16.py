# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward Thunder derives for Gemma-2B's GeGLU MLP after a fused gate/up
# projection (cf. NVIDIA/Fuser benchmarks/python/test_chunk_silu_bwd.py, with the
# tanh-approximated GELU): gate and up sliced from the saved [B, S, 2I] projection, the GELU
# recomputed in float, up's grad gelu(gate) * g, gate's grad through the derivative
# 0.5*(1 + t) + 0.5*x*(1 - t^2)*0.797885*(1 + 0.134145*x^2), both padded into their halves
# of [B, S, 2I] (the backward of the slices) and added, bf16 out.
# real-sizes: 22=16384 13=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 44], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 13, 22], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T14 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[2, 13, 22], strides=[1, 1, 1], manual_normalization=0)
    T15 = fd.ops.cast(T14, dtype=DataType.Float)
    T28 = fd.ops.slice(T0, start_indices=[0, 0, 22], end_indices=[2, 13, 44], strides=[1, 1, 1], manual_normalization=0)
    T29 = fd.ops.cast(T28, dtype=DataType.Float)
    T30 = fd.ops.cast(T1, dtype=DataType.Float)
    T31 = fd.ops.mul(T15, T15)
    T32 = fd.ops.mul(T31, T15)
    S33 = fd.define_scalar(0.04471, dtype=DataType.Double)
    T34 = fd.ops.mul(T32, S33)
    T35 = fd.ops.add(T15, T34)
    S36 = fd.define_scalar(0.79788, dtype=DataType.Double)
    T37 = fd.ops.mul(T35, S36)
    T38 = fd.ops.tanh(T37)
    S39 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S40 = fd.define_scalar(0.50000, dtype=DataType.Double)
    T41 = fd.ops.mul(T15, S40)
    T42 = fd.ops.add(T38, S39)
    T43 = fd.ops.mul(T41, T42)
    T44 = fd.ops.mul(T30, T43)
    T45 = fd.ops.mul(T30, T29)
    S46 = fd.define_scalar(0.50000, dtype=DataType.Double)
    S47 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S48 = fd.define_scalar(0.79788, dtype=DataType.Double)
    S49 = fd.define_scalar(0.13414, dtype=DataType.Double)
    T50 = fd.ops.add(S47, T38)
    T51 = fd.ops.mul(S46, T50)
    T52 = fd.ops.mul(T38, T38)
    T53 = fd.ops.sub(S47, T52)
    T54 = fd.ops.mul(S46, T15)
    T55 = fd.ops.mul(T54, T53)
    T56 = fd.ops.mul(T15, T15)
    T57 = fd.ops.mul(S49, T56)
    T58 = fd.ops.add(S47, T57)
    T59 = fd.ops.mul(S48, T58)
    T60 = fd.ops.mul(T55, T59)
    T61 = fd.ops.add(T51, T60)
    T62 = fd.ops.mul(T45, T61)
    S63 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T71 = fd.ops.pad(T62, [0, 22, 0, 0, 0, 0], S63)
    T79 = fd.ops.pad(T44, [22, 0, 0, 0, 0, 0], S63)
    T80 = fd.ops.add(T71, T79)
    T81 = fd.ops.cast(T80, dtype=DataType.BFloat16)
    fd.add_output(T81)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 44), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 13, 22), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
