# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF Qwen3 attention (q_norm / k_norm: an RMSNorm over head_dim applied per head
# before the rotary embedding) as Thunder hands the prologue to nvFuser, in the form of
# NVIDIA/Fuser benchmarks/python/test_rope.py's HF variants: q [B, S, Hq*D] and k
# [B, S, Hkv*D] reshaped to [B, S, H, D]; mean of squares over D in float, rsqrt(+ eps)
# broadcast back, the normalized value rounded to bf16 and scaled by the [D] weight (HF's
# weight * hidden.to(dtype)); transposed to [B, H, S, D] and rotate-half with cos/sin
# [B, S, D] broadcast over heads.
# real-sizes: 16=128 13=4096 12=32 8=64 3=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 192], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 48], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[16], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[16], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[1, 13, 16], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.define_tensor(shape=[1, 13, 16], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S6 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T12 = fd.ops.broadcast_in_dim(T4, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T18 = fd.ops.broadcast_in_dim(T5, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T24 = fd.ops.reshape(T0, new_shape=[1, 13, 12, 16])
    T25 = fd.ops.cast(T24, dtype=DataType.Float)
    T26 = fd.ops.mul(T25, T25)
    T27 = fd.ops.sum(T26, dims=[3], keepdim=False, dtype=DataType.Null)
    S28 = fd.define_scalar(16, dtype=DataType.Int)
    T29 = fd.ops.div(T27, S28)
    T35 = fd.ops.broadcast_in_dim(T29, shape=[1, 13, 12, 1], broadcast_dims=[0, 1, 2])
    T36 = fd.ops.add(T35, S6)
    T37 = fd.ops.rsqrt(T36)
    T43 = fd.ops.broadcast_in_dim(T37, shape=[1, 13, 12, 16], broadcast_dims=[0, 1, 2, 3])
    T44 = fd.ops.mul(T25, T43)
    T50 = fd.ops.broadcast_in_dim(T2, shape=[1, 13, 12, 16], broadcast_dims=[3])
    T51 = fd.ops.cast(T50, dtype=DataType.Float)
    T52 = fd.ops.cast(T44, dtype=DataType.BFloat16)
    T53 = fd.ops.cast(T52, dtype=DataType.Float)
    T54 = fd.ops.mul(T51, T53)
    T55 = fd.ops.cast(T54, dtype=DataType.BFloat16)
    T56 = fd.ops.permute(T55, dims=[0, 2, 1, 3])
    T62 = fd.ops.broadcast_in_dim(T12, shape=[1, 12, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T63 = fd.ops.cast(T62, dtype=DataType.Float)
    T69 = fd.ops.broadcast_in_dim(T18, shape=[1, 12, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T70 = fd.ops.cast(T69, dtype=DataType.Float)
    T86 = fd.ops.slice(T56, start_indices=[0, 0, 0, 0], end_indices=[1, 12, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T102 = fd.ops.slice(T56, start_indices=[0, 0, 0, 8], end_indices=[1, 12, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T103 = fd.ops.cast(T102, dtype=DataType.Float)
    T104 = fd.ops.neg(T103)
    T105 = fd.ops.cast(T104, dtype=DataType.BFloat16)
    T106 = fd.ops.cat([T105, T86], dim=-1, manual_padding=0)
    T107 = fd.ops.cast(T56, dtype=DataType.Float)
    T108 = fd.ops.mul(T107, T63)
    T109 = fd.ops.cast(T106, dtype=DataType.Float)
    T110 = fd.ops.mul(T109, T70)
    T111 = fd.ops.add(T108, T110)
    T112 = fd.ops.cast(T111, dtype=DataType.BFloat16)
    T118 = fd.ops.reshape(T1, new_shape=[1, 13, 3, 16])
    T119 = fd.ops.cast(T118, dtype=DataType.Float)
    T120 = fd.ops.mul(T119, T119)
    T121 = fd.ops.sum(T120, dims=[3], keepdim=False, dtype=DataType.Null)
    S122 = fd.define_scalar(16, dtype=DataType.Int)
    T123 = fd.ops.div(T121, S122)
    T129 = fd.ops.broadcast_in_dim(T123, shape=[1, 13, 3, 1], broadcast_dims=[0, 1, 2])
    T130 = fd.ops.add(T129, S6)
    T131 = fd.ops.rsqrt(T130)
    T137 = fd.ops.broadcast_in_dim(T131, shape=[1, 13, 3, 16], broadcast_dims=[0, 1, 2, 3])
    T138 = fd.ops.mul(T119, T137)
    T144 = fd.ops.broadcast_in_dim(T3, shape=[1, 13, 3, 16], broadcast_dims=[3])
    T145 = fd.ops.cast(T144, dtype=DataType.Float)
    T146 = fd.ops.cast(T138, dtype=DataType.BFloat16)
    T147 = fd.ops.cast(T146, dtype=DataType.Float)
    T148 = fd.ops.mul(T145, T147)
    T149 = fd.ops.cast(T148, dtype=DataType.BFloat16)
    T150 = fd.ops.permute(T149, dims=[0, 2, 1, 3])
    T156 = fd.ops.broadcast_in_dim(T12, shape=[1, 3, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T157 = fd.ops.cast(T156, dtype=DataType.Float)
    T163 = fd.ops.broadcast_in_dim(T18, shape=[1, 3, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T164 = fd.ops.cast(T163, dtype=DataType.Float)
    T180 = fd.ops.slice(T150, start_indices=[0, 0, 0, 0], end_indices=[1, 3, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T196 = fd.ops.slice(T150, start_indices=[0, 0, 0, 8], end_indices=[1, 3, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T197 = fd.ops.cast(T196, dtype=DataType.Float)
    T198 = fd.ops.neg(T197)
    T199 = fd.ops.cast(T198, dtype=DataType.BFloat16)
    T200 = fd.ops.cat([T199, T180], dim=-1, manual_padding=0)
    T201 = fd.ops.cast(T150, dtype=DataType.Float)
    T202 = fd.ops.mul(T201, T157)
    T203 = fd.ops.cast(T200, dtype=DataType.Float)
    T204 = fd.ops.mul(T203, T164)
    T205 = fd.ops.add(T202, T204)
    T206 = fd.ops.cast(T205, dtype=DataType.BFloat16)
    fd.add_output(T112)
    fd.add_output(T206)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 192), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
