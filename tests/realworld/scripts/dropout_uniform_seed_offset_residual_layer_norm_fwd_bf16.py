# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of the post-attention junction of a GPT-NeoX / Pythia-1.4B
# block in training (hidden 2048, 16 x 512 tokens): dropout drawn inside the fusion with
# fd.ops.uniform(0, 1, shape, rng_seed=..., rng_offset=...) from Int seed and offset scalar
# inputs (Thunder's uniform_philox, so the backward can replay the mask), keep = u < 0.9,
# the scaled attention output added to the residual, then LayerNorm (var_mean, affine);
# the new residual, the normalized bf16 output, mean and rstd are returned.
# real-sizes: 24=8192 32=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id12(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[24, 32], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[24, 32], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[32], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[32], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    S4 = fd.define_scalar(None, dtype=DataType.Int)
    S5 = fd.define_scalar(None, dtype=DataType.Int)
    S6 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S7 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S8 = fd.define_scalar(24, dtype=DataType.Int)
    S9 = fd.define_scalar(32, dtype=DataType.Int)
    T10 = fd.ops.uniform(S6, S7, shape=[S8, S9], rng_seed=S4, rng_offset=S5, dtype=DataType.Float)
    S11 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T12 = fd.ops.lt(T10, S11)
    T13 = fd.ops.cast(T0, dtype=DataType.Float)
    T14 = fd.ops.cast(T12, dtype=DataType.Float)
    T15 = fd.ops.mul(T13, T14)
    S16 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T17 = fd.ops.mul(T15, S16)
    T18 = fd.ops.cast(T1, dtype=DataType.Float)
    T19 = fd.ops.add(T18, T17)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T21 = fd.ops.cast(T20, dtype=DataType.Float)
    T22, T23 = fd.ops.var_mean(T21, dims=[1], correction=0, keepdim=False)
    T24 = fd.ops.broadcast_in_dim(T22, shape=[24, 1], broadcast_dims=[0])
    T25 = fd.ops.broadcast_in_dim(T23, shape=[24, 1], broadcast_dims=[0])
    S26 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T27 = fd.ops.add(T24, S26)
    T28 = fd.ops.rsqrt(T27)
    T29 = fd.ops.broadcast_in_dim(T25, shape=[24, 32], broadcast_dims=[0, 1])
    T30 = fd.ops.sub(T21, T29)
    T31 = fd.ops.broadcast_in_dim(T28, shape=[24, 32], broadcast_dims=[0, 1])
    T32 = fd.ops.mul(T30, T31)
    T33 = fd.ops.broadcast_in_dim(T2, shape=[24, 32], broadcast_dims=[1])
    T34 = fd.ops.cast(T33, dtype=DataType.Float)
    T35 = fd.ops.mul(T32, T34)
    T36 = fd.ops.broadcast_in_dim(T3, shape=[24, 32], broadcast_dims=[1])
    T37 = fd.ops.cast(T36, dtype=DataType.Float)
    T38 = fd.ops.add(T35, T37)
    T39 = fd.ops.cast(T38, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T39)
    fd.add_output(T25)
    fd.add_output(T28)


with FusionDefinition() as fd:
    nvfuser_fusion_id12(fd)

inputs = [
    torch.testing.make_tensor((24, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0'),
    2024,
    0,
]
fd.execute(inputs)
