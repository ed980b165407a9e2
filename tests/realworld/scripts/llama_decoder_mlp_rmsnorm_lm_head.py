# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/llama_inf_tests/graph_2.py (the tail of a Thunder-
# compiled Llama-3.2-1B decoder step, inference): the SDPA output [1, H, S, D] held in
# [1, S, H, D] memory is permuted, stride_order-ed and reshaped to [1, S, H*D], the o_proj
# linear, a residual add in float, RMSNorm (pow 2, row sum, times reciprocal(H) computed on
# a define_scalar, rsqrt) with a bf16 weight, the SwiGLU MLP as three linears with
# silu = x * reciprocal(1 + exp(-x)) written out, a second residual add and RMSNorm, and the
# LM head linear. Shrunk: hidden 2048 -> 256 (4 heads of 64), MLP 8192 -> 704, vocab
# 128256 -> 1000; the 6-token sequence is the original's.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4, 6, 64], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T1 = fd.define_tensor(shape=[256, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[1, 6, 256], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[256], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[704, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.define_tensor(shape=[704, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T6 = fd.define_tensor(shape=[256, 704], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T7 = fd.define_tensor(shape=[256], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T8 = fd.define_tensor(shape=[1000, 256], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T9 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T10 = fd.ops.stride_order(T9, stride_order=[3, 2, 1, 0])
    T15 = fd.ops.reshape(T10, new_shape=[1, 6, 256])
    T16 = fd.ops.stride_order(T15, stride_order=[2, 1, 0])
    T17 = fd.ops.linear(T16, T1)
    T18 = fd.ops.cast(T2, dtype=DataType.Float)
    T19 = fd.ops.cast(T17, dtype=DataType.Float)
    T20 = fd.ops.add(T18, T19)
    S21 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T22 = fd.ops.pow(T20, S21)
    T23 = fd.ops.sum(T22, dims=[2], keepdim=False, dtype=DataType.Null)
    T28 = fd.ops.broadcast_in_dim(T23, shape=[1, 6, 1], broadcast_dims=[0, 1])
    S29 = fd.define_scalar(256.000, dtype=DataType.Double)
    S30 = fd.ops.reciprocal(S29)
    T31 = fd.ops.mul(T28, S30)
    S32 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T33 = fd.ops.add(T31, S32)
    T34 = fd.ops.rsqrt(T33)
    T39 = fd.ops.broadcast_in_dim(T34, shape=[1, 6, 256], broadcast_dims=[0, 1, 2])
    T40 = fd.ops.mul(T20, T39)
    T45 = fd.ops.broadcast_in_dim(T3, shape=[1, 6, 256], broadcast_dims=[2])
    T46 = fd.ops.cast(T45, dtype=DataType.Float)
    T47 = fd.ops.mul(T46, T40)
    T48 = fd.ops.cast(T47, dtype=DataType.BFloat16)
    T49 = fd.ops.linear(T48, T4)
    T50 = fd.ops.cast(T49, dtype=DataType.Float)
    T51 = fd.ops.neg(T50)
    T52 = fd.ops.exp(T51)
    S53 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T54 = fd.ops.add(S53, T52)
    T55 = fd.ops.reciprocal(T54)
    T56 = fd.ops.mul(T50, T55)
    T57 = fd.ops.linear(T48, T5)
    T58 = fd.ops.cast(T57, dtype=DataType.Float)
    T59 = fd.ops.mul(T56, T58)
    T60 = fd.ops.cast(T59, dtype=DataType.BFloat16)
    T61 = fd.ops.linear(T60, T6)
    T62 = fd.ops.cast(T61, dtype=DataType.Float)
    T63 = fd.ops.add(T20, T62)
    S64 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T65 = fd.ops.pow(T63, S64)
    T66 = fd.ops.sum(T65, dims=[2], keepdim=False, dtype=DataType.Null)
    T71 = fd.ops.broadcast_in_dim(T66, shape=[1, 6, 1], broadcast_dims=[0, 1])
    S72 = fd.define_scalar(256.000, dtype=DataType.Double)
    S73 = fd.ops.reciprocal(S72)
    T74 = fd.ops.mul(T71, S73)
    S75 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T76 = fd.ops.add(T74, S75)
    T77 = fd.ops.rsqrt(T76)
    T82 = fd.ops.broadcast_in_dim(T77, shape=[1, 6, 256], broadcast_dims=[0, 1, 2])
    T83 = fd.ops.mul(T63, T82)
    T88 = fd.ops.broadcast_in_dim(T7, shape=[1, 6, 256], broadcast_dims=[2])
    T89 = fd.ops.cast(T88, dtype=DataType.Float)
    T90 = fd.ops.mul(T89, T83)
    T91 = fd.ops.cast(T90, dtype=DataType.BFloat16)
    T92 = fd.ops.linear(T91, T8)
    fd.add_output(T92)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn(1536, dtype=torch.bfloat16, device='cuda:0').as_strided((1, 4, 6, 64), (1536, 64, 256, 1)),
    torch.testing.make_tensor((256, 256), dtype=torch.bfloat16, device='cuda:0', low=-0.1, high=0.1),
    torch.testing.make_tensor((1, 6, 256), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((256,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((704, 256), dtype=torch.bfloat16, device='cuda:0', low=-0.1, high=0.1),
    torch.testing.make_tensor((704, 256), dtype=torch.bfloat16, device='cuda:0', low=-0.1, high=0.1),
    torch.testing.make_tensor((256, 704), dtype=torch.bfloat16, device='cuda:0', low=-0.1, high=0.1),
    torch.testing.make_tensor((256,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1000, 256), dtype=torch.bfloat16, device='cuda:0', low=-0.1, high=0.1),
]
fd.execute(inputs)
