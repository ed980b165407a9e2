# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_chunk_silu_bwd.py (chunk_silu_bwd_fusion:
# the backward of silu(x1) * x2 with x1, x2 = torch.chunk(x, 2, -1)) on a [B, S, 2I]
# activation, Llama-2-7B's intermediate 11008: the halves sliced, promoted to float, the
# silu derivative through reciprocal(1 + exp(-x)), and the chunk's backward written as two
# pads into [B, S, 2I] (widths (I, 0) and (0, I)) added together, bf16 out.
# real-sizes: 20=11008 13=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 40], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 13, 20], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T14 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[2, 13, 20], strides=[1, 1, 1], manual_normalization=0)
    T27 = fd.ops.slice(T0, start_indices=[0, 0, 20], end_indices=[2, 13, 40], strides=[1, 1, 1], manual_normalization=0)
    T28 = fd.ops.cast(T1, dtype=DataType.Float)
    T29 = fd.ops.cast(T14, dtype=DataType.Float)
    T30 = fd.ops.cast(T27, dtype=DataType.Float)
    T31 = fd.ops.neg(T29)
    T32 = fd.ops.exp(T31)
    S33 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T34 = fd.ops.add(S33, T32)
    T35 = fd.ops.reciprocal(T34)
    T36 = fd.ops.mul(T29, T35)
    T37 = fd.ops.mul(T30, T28)
    T38 = fd.ops.mul(T36, T28)
    T39 = fd.ops.mul(T35, T37)
    T40 = fd.ops.mul(T29, T37)
    T41 = fd.ops.neg(T40)
    T42 = fd.ops.mul(T41, T35)
    T43 = fd.ops.mul(T42, T35)
    T44 = fd.ops.mul(T43, T32)
    T45 = fd.ops.neg(T44)
    T46 = fd.ops.add(T39, T45)
    S47 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T55 = fd.ops.pad(T38, [20, 0, 0, 0, 0, 0], S47)
    S56 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T64 = fd.ops.pad(T46, [0, 20, 0, 0, 0, 0], S56)
    T65 = fd.ops.add(T55, T64)
    T66 = fd.ops.cast(T65, dtype=DataType.BFloat16)
    fd.add_output(T66)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 13, 20), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
