# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_silu_mul_bwd.py (silu_mul_bwd_fusion,
# the backward of silu(x) * y as Thunder differentiates it): bf16 grad_out, x, y promoted to
# float; grad_y = grad * silu(x), grad_x through the sigmoid's derivative; bf16 outputs.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id6(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    T6 = fd.ops.neg(T4)
    T7 = fd.ops.exp(T6)
    S8 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T9 = fd.ops.add(S8, T7)
    T10 = fd.ops.reciprocal(T9)
    T11 = fd.ops.mul(T4, T10)
    T12 = fd.ops.mul(T3, T5)
    T13 = fd.ops.mul(T3, T11)
    T14 = fd.ops.mul(T12, T10)
    T15 = fd.ops.mul(T12, T4)
    T16 = fd.ops.neg(T15)
    T17 = fd.ops.mul(T16, T10)
    T18 = fd.ops.mul(T17, T10)
    S19 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T20 = fd.ops.mul(S19, T18)
    T21 = fd.ops.mul(T20, T7)
    T22 = fd.ops.neg(T21)
    T23 = fd.ops.add(T14, T22)
    T24 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    T25 = fd.ops.cast(T23, dtype=DataType.BFloat16)
    fd.add_output(T24)
    fd.add_output(T25)


with FusionDefinition() as fd:
    nvfuser_fusion_id6(fd)

inputs = [
    torch.randn((32, 300), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((32, 300), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((32, 300), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
