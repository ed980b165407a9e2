# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_gelu_bwd.py and test_gelu_bwd_reduction.py
# (gelu_bwd_fusion): bias add then the derivative of tanh-approximated GELU in float, with
# untyped define_scalar constants, the bias broadcast through a define_vector built from
# `input.size(-1)`, and the bias gradient as a column sum. bf16 in and out.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    S6 = fd.define_scalar(0.79788456)
    S7 = fd.define_scalar(0.044715)
    S8 = fd.define_scalar(0.1070322243)
    V9 = fd.define_vector([1, T0.size(-1)], dtype=DataType.Int)
    T10 = fd.ops.broadcast_in_dim(T5, shape=V9, broadcast_dims=[1])
    T11 = fd.ops.add(T3, T10)
    T12 = fd.ops.mul(T11, S6)
    T13 = fd.ops.mul(T11, S7)
    T14 = fd.ops.mul(T13, T11)
    S15 = fd.define_scalar(1.0)
    T16 = fd.ops.add(S15, T14)
    T17 = fd.ops.mul(T12, T16)
    T18 = fd.ops.tanh(T17)
    S19 = fd.define_scalar(0.50)
    T20 = fd.ops.mul(T11, S19)
    T21 = fd.ops.mul(T18, T18)
    T22 = fd.ops.neg(T21)
    T23 = fd.ops.add(T22, S15)
    T24 = fd.ops.mul(T11, S8)
    T25 = fd.ops.mul(T24, T11)
    T26 = fd.ops.add(T25, S6)
    T27 = fd.ops.mul(T23, T26)
    T28 = fd.ops.mul(T20, T27)
    T29 = fd.ops.add(T18, S15)
    T30 = fd.ops.mul(T29, S19)
    T31 = fd.ops.add(T28, T30)
    T32 = fd.ops.mul(T4, T31)
    T33 = fd.ops.sum(T32, dims=[0], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.cast(T32, dtype=DataType.BFloat16)
    T35 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    fd.add_output(T34)
    fd.add_output(T35)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((48, 200), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((48, 200), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((200,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
