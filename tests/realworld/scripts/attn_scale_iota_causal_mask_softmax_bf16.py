# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on eager (non-flash) causal self-attention as Thunder hands the part between the
# two matmuls to nvFuser (HF eager_attention_forward / nanoGPT's slow path; cf. NVIDIA/Fuser
# benchmarks/python/test_nanogpt_attn_fwd.py and issue #4670's iota causal mask): bf16 scores
# [B, H, S, S] cast to float and scaled by 1/sqrt(128), the causal mask built in the fusion
# from two iotas broadcast to [S, S] and compared (row >= col), broadcast to the scores and
# applied with where(mask, x, -inf); softmax as max, sub, exp, sum, div with
# broadcast_in_dim back; bf16 probabilities out.
# real-sizes: 13=2048 5=12
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 5, 13, 13], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    S2 = fd.define_scalar(0.08839, dtype=DataType.Double)
    T3 = fd.ops.mul(T1, S2)
    S4 = fd.define_scalar(13, dtype=DataType.Int)
    S5 = fd.define_scalar(0, dtype=DataType.Int)
    S6 = fd.define_scalar(1, dtype=DataType.Int)
    T7 = fd.ops.iota(S4, S5, S6, dtype=DataType.Int)
    S8 = fd.define_scalar(0, dtype=DataType.Int)
    S9 = fd.define_scalar(1, dtype=DataType.Int)
    T10 = fd.ops.iota(S4, S8, S9, dtype=DataType.Int)
    T14 = fd.ops.broadcast_in_dim(T7, shape=[13, 13], broadcast_dims=[0])
    T18 = fd.ops.broadcast_in_dim(T10, shape=[13, 13], broadcast_dims=[1])
    T19 = fd.ops.ge(T14, T18)
    T25 = fd.ops.broadcast_in_dim(T19, shape=[1, 5, 13, 13], broadcast_dims=[2, 3])
    S26 = fd.define_scalar(float('-inf'), dtype=DataType.Double)
    T27 = fd.ops.where(T25, T3, S26)
    T28 = fd.ops.max(T27, dims=[3], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.broadcast_in_dim(T28, shape=[1, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T40 = fd.ops.broadcast_in_dim(T34, shape=[1, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T41 = fd.ops.sub(T27, T40)
    T42 = fd.ops.exp(T41)
    T43 = fd.ops.sum(T42, dims=[3], keepdim=False, dtype=DataType.Null)
    T49 = fd.ops.broadcast_in_dim(T43, shape=[1, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T55 = fd.ops.broadcast_in_dim(T49, shape=[1, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T56 = fd.ops.div(T42, T55)
    T57 = fd.ops.cast(T56, dtype=DataType.BFloat16)
    fd.add_output(T57)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 5, 13, 13), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
