# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_chunk_silu_fwd.py / test_silu_mul_fwd.py
# (the SwiGLU MLP of Llama-style models after a fused gate+up projection): the [T, 2I] bf16
# projection sliced into gate and up halves, silu(gate) * up in float, bf16 out; the silu
# written as Thunder decomposes it (x * reciprocal(1 + exp(-x))) next to fd.ops.silu.
# Real sizes: Llama-3-8B's MLP (intermediate size 14336) over 8192 tokens.
# real-sizes: 24=8192 352=28672 176=14336
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.slice(T0, start_indices=[0, 0], end_indices=[24, 176], strides=[1, 1])
    T2 = fd.ops.slice(T0, start_indices=[0, 176], end_indices=[24, 352], strides=[1, 1])
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.cast(T2, dtype=DataType.Float)
    T5 = fd.ops.neg(T3)
    T6 = fd.ops.exp(T5)
    S7 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T8 = fd.ops.add(S7, T6)
    T9 = fd.ops.reciprocal(T8)
    T10 = fd.ops.mul(T3, T9)
    T11 = fd.ops.mul(T10, T4)
    T12 = fd.ops.cast(T11, dtype=DataType.BFloat16)
    T13 = fd.ops.silu(T3)
    T14 = fd.ops.mul(T13, T4)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T12)
    fd.add_output(T15)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.randn((24, 352), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
