# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_nanogpt_attn_fwd.py (nanoGPT's
# attention without the matmuls, from Thunder): scores scaled by 1/sqrt(head_size), the
# causal `bias` buffer sliced to [1, 1, S, S] out of a larger block (contiguity
# [None, None, False, True], an as_strided input), masked_fill(bias == 0, -inf) as
# eq/where with float("-inf"), softmax with reciprocal, then dropout from fd.ops.uniform
# with explicit seed and offset; outputs include the Bool dropout and causal masks.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id8(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, 1, -1, -1], contiguity=[None, None, False, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(None, dtype=DataType.Int)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    S5 = fd.define_scalar(0.25, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    S7 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T8 = fd.ops.eq(T1, S7)
    V9 = T0.shape()
    T10 = fd.ops.broadcast_in_dim(T8, shape=V9, broadcast_dims=[0, 1, 2, 3])
    S11 = fd.define_scalar(float("-inf"), dtype=DataType.Double)
    T12 = fd.ops.where(T10, S11, T6)
    T13 = fd.ops.max(T12, dims=[3], keepdim=False, dtype=DataType.Null)
    V14 = fd.define_vector([T0.size(0), T0.size(1), T0.size(2), 1], dtype=DataType.Int)
    T15 = fd.ops.broadcast_in_dim(T13, shape=V14, broadcast_dims=[0, 1, 2])
    T16 = fd.ops.broadcast_in_dim(T15, shape=V9, broadcast_dims=[0, 1, 2, 3])
    T17 = fd.ops.sub(T12, T16)
    T18 = fd.ops.exp(T17)
    T19 = fd.ops.sum(T18, dims=[3], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.broadcast_in_dim(T19, shape=V14, broadcast_dims=[0, 1, 2])
    T21 = fd.ops.broadcast_in_dim(T20, shape=V9, broadcast_dims=[0, 1, 2, 3])
    T22 = fd.ops.reciprocal(T21)
    T23 = fd.ops.mul(T18, T22)
    S24 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S25 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T26 = fd.ops.uniform(S24, S25, shape=V9, rng_seed=S2, rng_offset=S3, dtype=DataType.Float)
    S27 = fd.define_scalar(0.8, dtype=DataType.Double)
    T28 = fd.ops.lt(T26, S27)
    T29 = fd.ops.mul(T23, T28)
    S30 = fd.define_scalar(1.25, dtype=DataType.Double)
    T31 = fd.ops.mul(T29, S30)
    T32 = fd.ops.cast(T31, dtype=DataType.BFloat16)
    T33 = fd.ops.cast(T23, dtype=DataType.BFloat16)
    fd.add_output(T32)
    fd.add_output(T28)
    fd.add_output(T33)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id8(fd)

inputs = [
    torch.randn((2, 3, 16, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 2, (1024,), dtype=torch.float32, device='cuda:0').as_strided((1, 1, 16, 16), (1024, 1024, 32, 1)),
    2024,
    8,
]
fd.execute(inputs)
