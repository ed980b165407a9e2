# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder trace of Qwen3's per-head query normalization
# (q_norm(q_proj(x).view(B, S, H, D)).transpose(1, 2), Qwen3-8B: 32 heads of 128): the
# projection output [B, S, H*D] is reshaped to [B, S, H, D], RMSNorm runs over the head
# dimension (a reduction over 128 elements per head, eps 1e-6) with a [D] bf16 weight, and
# the result is permuted to [B, H, S, D] for attention.
# real-sizes: 6=4096 4=32 16=128
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id16(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 6, 64], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[16], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.reshape(T0, new_shape=[1, 6, 4, 16])
    T3 = fd.ops.cast(T2, dtype=DataType.Float)
    S4 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T5 = fd.ops.pow(T3, S4)
    T6 = fd.ops.sum(T5, dims=[3], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.broadcast_in_dim(T6, shape=[1, 6, 4, 1], broadcast_dims=[0, 1, 2])
    S8 = fd.define_scalar(16.0000, dtype=DataType.Double)
    T9 = fd.ops.div(T7, S8)
    S10 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T11 = fd.ops.add(T9, S10)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.broadcast_in_dim(T12, shape=[1, 6, 4, 16], broadcast_dims=[0, 1, 2, 3])
    T14 = fd.ops.mul(T3, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    T16 = fd.ops.broadcast_in_dim(T1, shape=[1, 6, 4, 16], broadcast_dims=[3])
    T17 = fd.ops.cast(T16, dtype=DataType.Float)
    T18 = fd.ops.cast(T15, dtype=DataType.Float)
    T19 = fd.ops.mul(T17, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T21 = fd.ops.permute(T20, dims=[0, 2, 1, 3])
    fd.add_output(T21)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id16(fd)

inputs = [
    torch.testing.make_tensor((1, 6, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
