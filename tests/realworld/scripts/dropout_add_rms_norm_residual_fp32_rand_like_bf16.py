# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on flash-attn's dropout_add_rms_norm with residual_in_fp32=True (used by Mamba /
# GPT-NeoX-style blocks, hidden 2560) as one nvFuser fusion: the bf16 branch output
# dropped with fd.ops.rand_like(x, rng_seed=..., rng_offset=...) from Int scalar inputs
# (p = 0.1), added to the float32 residual (kept in fp32 and returned), RMSNorm of the sum
# with eps 1e-5 and a bf16 weight, bf16 normalized output and the float rstd [B, S, 1].
# real-sizes: 10=2048 80=2560
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    S3 = fd.define_scalar(None, dtype=DataType.Int)
    S4 = fd.define_scalar(None, dtype=DataType.Int)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.rand_like(T5, rng_seed=S3, rng_offset=S4)
    S7 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T8 = fd.ops.ge(T6, S7)
    T9 = fd.ops.where(T8, T5, 0.0)
    S10 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T11 = fd.ops.mul(T9, S10)
    T12 = fd.ops.add(T11, T1)
    T13 = fd.ops.mul(T12, T12)
    T14 = fd.ops.sum(T13, dims=[2], keepdim=True, dtype=DataType.Null)
    S15 = fd.ops.reciprocal(T0.size(2))
    T16 = fd.ops.mul(T14, S15)
    S17 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T18 = fd.ops.add(T16, S17)
    T19 = fd.ops.rsqrt(T18)
    T20 = fd.ops.mul(T12, T19)
    T21 = fd.ops.cast(T2, dtype=DataType.Float)
    T22 = fd.ops.broadcast_in_dim(T21, shape=T0.shape(), broadcast_dims=[2])
    T23 = fd.ops.mul(T20, T22)
    T24 = fd.ops.cast(T23, dtype=DataType.BFloat16)
    fd.add_output(T24)
    fd.add_output(T12)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.testing.make_tensor((2, 10, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((2, 10, 80), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((80,), dtype=torch.bfloat16, device='cuda:0'),
    42,
    8,
]
fd.execute(inputs)
