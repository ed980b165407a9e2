# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on diffusers' get_timestep_embedding (huggingface/diffusers
# src/diffusers/models/embeddings.py) as a Thunder trace hands it to nvFuser: a float iota
# (start and step given as Double scalars) for the frequency exponent
# -log(10000) * arange(half) / half, exp, an outer product with the float timesteps via
# broadcast_in_dim, sin and cos concatenated (flip_sin_to_cos: cos first), then cast to bf16.
# Only the bf16 result is an output: the float one differs from torch's by the last bit of
# exp (glibc against torch's vectorized exp), which the product with timesteps up to 1000
# lifts past a 1e-5 tolerance.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(64, dtype=DataType.Int)
    S2 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S3 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T4 = fd.ops.iota(S1, S2, S3, dtype=DataType.Float)
    S5 = fd.define_scalar(-9.21034037197618, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    S7 = fd.define_scalar(64.0000, dtype=DataType.Double)
    T8 = fd.ops.div(T6, S7)
    T9 = fd.ops.exp(T8)
    T10 = fd.ops.broadcast_in_dim(T0, shape=[24, 1], broadcast_dims=[0])
    T11 = fd.ops.broadcast_in_dim(T9, shape=[1, 64], broadcast_dims=[1])
    T12 = fd.ops.mul(T10, T11)
    S13 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T14 = fd.ops.mul(T12, S13)
    T15 = fd.ops.sin(T14)
    T16 = fd.ops.cos(T14)
    T17 = fd.ops.cat([T16, T15], dim=-1, manual_padding=0)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.testing.make_tensor((24,), dtype=torch.float32, device='cuda:0', low=0.0, high=1000.0),
]
fd.execute(inputs)
