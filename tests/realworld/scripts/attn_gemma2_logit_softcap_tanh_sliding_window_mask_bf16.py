# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF Gemma-2 eager attention (attn_logit_softcapping 50, sliding-window layers)
# as Thunder hands the part between the matmuls to nvFuser: bf16 scores [B, H, S, S] in
# float times the query scaling, divided by the softcap, tanh, times the softcap; the
# sliding-window causal mask built from two iotas (col <= row and col > row - window,
# logical_and), turned into an additive bf16 mask with where(keep, 0, lowest) and broadcast
# over batch and heads; softmax in float, bf16 out, the [S, S] mask returned too.
# real-sizes: 13=2048 7=1024 5=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 5, 13, 13], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    S1 = fd.define_scalar(0.06250, dtype=DataType.Double)
    S2 = fd.define_scalar(50.000, dtype=DataType.Double)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.mul(T3, S1)
    T5 = fd.ops.div(T4, S2)
    T6 = fd.ops.tanh(T5)
    T7 = fd.ops.mul(T6, S2)
    S8 = fd.define_scalar(13, dtype=DataType.Int)
    S9 = fd.define_scalar(0, dtype=DataType.Int)
    S10 = fd.define_scalar(1, dtype=DataType.Int)
    T11 = fd.ops.iota(S8, S9, S10, dtype=DataType.Int)
    S12 = fd.define_scalar(0, dtype=DataType.Int)
    S13 = fd.define_scalar(1, dtype=DataType.Int)
    T14 = fd.ops.iota(S8, S12, S13, dtype=DataType.Int)
    T18 = fd.ops.broadcast_in_dim(T11, shape=[13, 13], broadcast_dims=[0])
    T22 = fd.ops.broadcast_in_dim(T14, shape=[13, 13], broadcast_dims=[1])
    T23 = fd.ops.le(T22, T18)
    S24 = fd.define_scalar(7, dtype=DataType.Int)
    T25 = fd.ops.sub(T18, S24)
    T26 = fd.ops.gt(T22, T25)
    T27 = fd.ops.logical_and(T23, T26)
    S28 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S29 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T30 = fd.ops.where(T27, S28, S29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    T37 = fd.ops.broadcast_in_dim(T31, shape=[1, 5, 13, 13], broadcast_dims=[2, 3])
    T38 = fd.ops.cast(T37, dtype=DataType.Float)
    T39 = fd.ops.add(T7, T38)
    T40 = fd.ops.max(T39, dims=[3], keepdim=False, dtype=DataType.Null)
    T46 = fd.ops.broadcast_in_dim(T40, shape=[1, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T52 = fd.ops.broadcast_in_dim(T46, shape=[1, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T53 = fd.ops.sub(T39, T52)
    T54 = fd.ops.exp(T53)
    T55 = fd.ops.sum(T54, dims=[3], keepdim=False, dtype=DataType.Null)
    T61 = fd.ops.broadcast_in_dim(T55, shape=[1, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T67 = fd.ops.broadcast_in_dim(T61, shape=[1, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T68 = fd.ops.div(T54, T67)
    T69 = fd.ops.cast(T68, dtype=DataType.BFloat16)
    fd.add_output(T69)
    fd.add_output(T31)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 5, 13, 13), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
