# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_nanogpt_attn_bwd.py (nanogpt_attn_bwd_fusion:
# the backward of masked_fill + softmax + dropout between nanoGPT's attention matmuls) as a
# Thunder trace prints it with static sizes: the incoming grad scaled by 1/(1-p) and the bool
# dropout mask, softmax's backward p * (g - sum(p * g)) with the row sum broadcast back in
# two steps, the causal mask a bool [B, H, S, S] input expanded from [S, S] (stride 0 on
# batch and heads, contiguity [None, None, True, True]) zeroing the masked scores, times
# 1/sqrt(head_size); bf16 in and out.
# real-sizes: 13=2048 5=12
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(1.11111, dtype=DataType.Double)
    S1 = fd.define_scalar(0.08839, dtype=DataType.Double)
    T2 = fd.define_tensor(shape=[1, 5, 13, 13], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 5, 13, 13], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 5, 13, 13], contiguity=[None, True, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    T5 = fd.define_tensor(shape=[1, 5, 13, 13], contiguity=[None, None, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    T6 = fd.ops.cast(T2, dtype=DataType.Float)
    T7 = fd.ops.cast(T3, dtype=DataType.Float)
    T8 = fd.ops.cast(T4, dtype=DataType.Float)
    T9 = fd.ops.mul(T6, S0)
    T10 = fd.ops.mul(T9, T8)
    T11 = fd.ops.mul(T7, T10)
    T12 = fd.ops.sum(T11, dims=[3], keepdim=False, dtype=DataType.Null)
    T18 = fd.ops.broadcast_in_dim(T12, shape=[1, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T24 = fd.ops.broadcast_in_dim(T18, shape=[1, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T25 = fd.ops.sub(T10, T24)
    T26 = fd.ops.mul(T7, T25)
    S27 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T28 = fd.ops.where(T5, S27, T26)
    T29 = fd.ops.mul(T28, S1)
    T30 = fd.ops.cast(T29, dtype=DataType.BFloat16)
    fd.add_output(T30)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 5, 13, 13), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 5, 13, 13), dtype=torch.bfloat16, device='cuda:0'),
    torch.rand((1, 5, 13, 13), device='cuda:0') < 0.9,
    (torch.rand((13, 13), device='cuda:0') < 0.5).expand(1, 5, 13, 13),
]
fd.execute(inputs)
