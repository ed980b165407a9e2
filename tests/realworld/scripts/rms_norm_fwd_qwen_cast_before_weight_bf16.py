# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of HF Qwen2RMSNorm (Qwen2.5-14B, hidden 5120, eps 1e-6):
# variance = x.float().pow(2).mean(-1, keepdim=True), x * rsqrt(variance + eps), then
# `weight * x.to(input_dtype)`: the normalized value is rounded to bf16 *before* the weight
# multiply, which itself runs in float and rounds again (two bf16 casts in a row of
# pointwise ops). Leading batch of 1; only the bf16 result is returned (inference).
# real-sizes: 18=4096 40=5120
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 18, 40], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[40], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    S3 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T4 = fd.ops.pow(T2, S3)
    T5 = fd.ops.sum(T4, dims=[2], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[1, 18, 1], broadcast_dims=[0, 1])
    S7 = fd.define_scalar(40.0000, dtype=DataType.Double)
    T8 = fd.ops.div(T6, S7)
    S9 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T10 = fd.ops.add(T8, S9)
    T11 = fd.ops.rsqrt(T10)
    T12 = fd.ops.broadcast_in_dim(T11, shape=[1, 18, 40], broadcast_dims=[0, 1, 2])
    T13 = fd.ops.mul(T2, T12)
    T14 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    T15 = fd.ops.broadcast_in_dim(T1, shape=[1, 18, 40], broadcast_dims=[2])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.cast(T14, dtype=DataType.Float)
    T18 = fd.ops.mul(T16, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.testing.make_tensor((1, 18, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((40,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
