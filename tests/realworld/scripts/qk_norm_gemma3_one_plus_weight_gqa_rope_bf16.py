# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF Gemma3 attention (q_norm / k_norm: Gemma3RMSNorm over head_dim per head, the
# normalized value scaled by (1 + weight) in float before it is cast back, as Gemma's norm
# does, unlike Qwen3's weight * hidden.to(dtype)) as Thunder hands the prologue to nvFuser, in
# the form of NVIDIA/Fuser benchmarks/python/test_rope.py's HF variants: q [B, S, Hq*D] and
# k [B, S, Hkv*D] (grouped-query: 8 q heads, 4 kv heads, head_dim 256 in Gemma3 4B) reshaped
# to [B, S, H, D]; mean of squares over D in float, rsqrt(+ eps); transposed to [B, H, S, D]
# and rotate-half with cos/sin [B, S, D] broadcast over heads.
# real-sizes: 16=256 13=4096 6=8 3=4 8=128
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 96], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 48], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[16], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[16], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[1, 13, 16], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.define_tensor(shape=[1, 13, 16], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S6 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    S7 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T8 = fd.ops.broadcast_in_dim(T4, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T9 = fd.ops.broadcast_in_dim(T5, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T10 = fd.ops.reshape(T0, new_shape=[1, 13, 6, 16])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T12 = fd.ops.mul(T11, T11)
    T13 = fd.ops.sum(T12, dims=[3], keepdim=False, dtype=DataType.Null)
    S14 = fd.define_scalar(16, dtype=DataType.Int)
    T15 = fd.ops.div(T13, S14)
    T16 = fd.ops.broadcast_in_dim(T15, shape=[1, 13, 6, 1], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.add(T16, S6)
    T18 = fd.ops.rsqrt(T17)
    T19 = fd.ops.broadcast_in_dim(T18, shape=[1, 13, 6, 16], broadcast_dims=[0, 1, 2, 3])
    T20 = fd.ops.mul(T11, T19)
    T21 = fd.ops.cast(T2, dtype=DataType.Float)
    T22 = fd.ops.add(S7, T21)
    T23 = fd.ops.broadcast_in_dim(T22, shape=[1, 13, 6, 16], broadcast_dims=[3])
    T24 = fd.ops.mul(T20, T23)
    T25 = fd.ops.cast(T24, dtype=DataType.BFloat16)
    T26 = fd.ops.permute(T25, dims=[0, 2, 1, 3])
    T27 = fd.ops.broadcast_in_dim(T8, shape=[1, 6, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T28 = fd.ops.cast(T27, dtype=DataType.Float)
    T29 = fd.ops.broadcast_in_dim(T9, shape=[1, 6, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T30 = fd.ops.cast(T29, dtype=DataType.Float)
    T31 = fd.ops.slice(T26, start_indices=[0, 0, 0, 0], end_indices=[1, 6, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T32 = fd.ops.slice(T26, start_indices=[0, 0, 0, 8], end_indices=[1, 6, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T33 = fd.ops.cast(T32, dtype=DataType.Float)
    T34 = fd.ops.neg(T33)
    T35 = fd.ops.cast(T34, dtype=DataType.BFloat16)
    T36 = fd.ops.cat([T35, T31], dim=-1, manual_padding=0)
    T37 = fd.ops.cast(T26, dtype=DataType.Float)
    T38 = fd.ops.mul(T37, T28)
    T39 = fd.ops.cast(T36, dtype=DataType.Float)
    T40 = fd.ops.mul(T39, T30)
    T41 = fd.ops.add(T38, T40)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    T43 = fd.ops.reshape(T1, new_shape=[1, 13, 3, 16])
    T44 = fd.ops.cast(T43, dtype=DataType.Float)
    T45 = fd.ops.mul(T44, T44)
    T46 = fd.ops.sum(T45, dims=[3], keepdim=False, dtype=DataType.Null)
    S47 = fd.define_scalar(16, dtype=DataType.Int)
    T48 = fd.ops.div(T46, S47)
    T49 = fd.ops.broadcast_in_dim(T48, shape=[1, 13, 3, 1], broadcast_dims=[0, 1, 2])
    T50 = fd.ops.add(T49, S6)
    T51 = fd.ops.rsqrt(T50)
    T52 = fd.ops.broadcast_in_dim(T51, shape=[1, 13, 3, 16], broadcast_dims=[0, 1, 2, 3])
    T53 = fd.ops.mul(T44, T52)
    T54 = fd.ops.cast(T3, dtype=DataType.Float)
    T55 = fd.ops.add(S7, T54)
    T56 = fd.ops.broadcast_in_dim(T55, shape=[1, 13, 3, 16], broadcast_dims=[3])
    T57 = fd.ops.mul(T53, T56)
    T58 = fd.ops.cast(T57, dtype=DataType.BFloat16)
    T59 = fd.ops.permute(T58, dims=[0, 2, 1, 3])
    T60 = fd.ops.broadcast_in_dim(T8, shape=[1, 3, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T61 = fd.ops.cast(T60, dtype=DataType.Float)
    T62 = fd.ops.broadcast_in_dim(T9, shape=[1, 3, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T63 = fd.ops.cast(T62, dtype=DataType.Float)
    T64 = fd.ops.slice(T59, start_indices=[0, 0, 0, 0], end_indices=[1, 3, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T65 = fd.ops.slice(T59, start_indices=[0, 0, 0, 8], end_indices=[1, 3, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T66 = fd.ops.cast(T65, dtype=DataType.Float)
    T67 = fd.ops.neg(T66)
    T68 = fd.ops.cast(T67, dtype=DataType.BFloat16)
    T69 = fd.ops.cat([T68, T64], dim=-1, manual_padding=0)
    T70 = fd.ops.cast(T59, dtype=DataType.Float)
    T71 = fd.ops.mul(T70, T61)
    T72 = fd.ops.cast(T69, dtype=DataType.Float)
    T73 = fd.ops.mul(T72, T63)
    T74 = fd.ops.add(T71, T73)
    T75 = fd.ops.cast(T74, dtype=DataType.BFloat16)
    fd.add_output(T42)
    fd.add_output(T75)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
