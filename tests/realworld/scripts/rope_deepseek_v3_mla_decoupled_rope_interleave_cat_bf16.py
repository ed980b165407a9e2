# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF DeepseekV3Attention (multi-head latent attention with a decoupled rotary
# part, rope_interleave) as Thunder hands its elementwise prologue to nvFuser, in the form of
# NVIDIA/Fuser benchmarks/python/test_rope.py's HF variants: q [B, S, H*(nope+rope)] split
# per head into the no-position part and the rotary part; the shared rotary key k_pe sliced
# off the compressed kv [B, S, kv_lora + rope] and given a size-1 head axis; the kv_b
# output split into k_nope and v; both rotary parts de-interleaved (view [.., d/2, 2],
# transpose(4, 3), reshape) then rotate-half with cos/sin [S, rope]; query = cat(q_nope,
# q_rot), key = cat(k_nope, k_rot expanded to every head).
# real-sizes: 28=512 36=576 24=256 20=192 13=2048 12=128 8=64 5=128 4=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 100], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 36], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 13, 120], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T10 = fd.ops.reshape(T0, new_shape=[1, 13, 5, 20])
    T11 = fd.ops.permute(T10, dims=[0, 2, 1, 3])
    T27 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T43 = fd.ops.slice(T11, start_indices=[0, 0, 0, 12], end_indices=[1, 5, 13, 20], strides=[1, 1, 1, 1], manual_normalization=0)
    T56 = fd.ops.slice(T1, start_indices=[0, 0, 28], end_indices=[1, 13, 36], strides=[1, 1, 1], manual_normalization=0)
    T62 = fd.ops.reshape(T56, new_shape=[1, 13, 1, 8])
    T63 = fd.ops.permute(T62, dims=[0, 2, 1, 3])
    T69 = fd.ops.reshape(T2, new_shape=[1, 13, 5, 24])
    T70 = fd.ops.permute(T69, dims=[0, 2, 1, 3])
    T86 = fd.ops.slice(T70, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T102 = fd.ops.slice(T70, start_indices=[0, 0, 0, 12], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T109 = fd.ops.reshape(T43, new_shape=[1, 5, 13, 4, 2])
    T110 = fd.ops.permute(T109, dims=[0, 1, 2, 4, 3])
    T116 = fd.ops.reshape(T110, new_shape=[1, 5, 13, 8])
    T122 = fd.ops.broadcast_in_dim(T3, shape=[1, 5, 13, 8], broadcast_dims=[2, 3])
    T123 = fd.ops.cast(T122, dtype=DataType.Float)
    T129 = fd.ops.broadcast_in_dim(T4, shape=[1, 5, 13, 8], broadcast_dims=[2, 3])
    T130 = fd.ops.cast(T129, dtype=DataType.Float)
    T146 = fd.ops.slice(T116, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T162 = fd.ops.slice(T116, start_indices=[0, 0, 0, 4], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T163 = fd.ops.cast(T162, dtype=DataType.Float)
    T164 = fd.ops.neg(T163)
    T165 = fd.ops.cast(T164, dtype=DataType.BFloat16)
    T166 = fd.ops.cat([T165, T146], dim=-1, manual_padding=0)
    T167 = fd.ops.cast(T116, dtype=DataType.Float)
    T168 = fd.ops.mul(T167, T123)
    T169 = fd.ops.cast(T166, dtype=DataType.Float)
    T170 = fd.ops.mul(T169, T130)
    T171 = fd.ops.add(T168, T170)
    T172 = fd.ops.cast(T171, dtype=DataType.BFloat16)
    T179 = fd.ops.reshape(T63, new_shape=[1, 1, 13, 4, 2])
    T180 = fd.ops.permute(T179, dims=[0, 1, 2, 4, 3])
    T186 = fd.ops.reshape(T180, new_shape=[1, 1, 13, 8])
    T192 = fd.ops.broadcast_in_dim(T3, shape=[1, 1, 13, 8], broadcast_dims=[2, 3])
    T193 = fd.ops.cast(T192, dtype=DataType.Float)
    T199 = fd.ops.broadcast_in_dim(T4, shape=[1, 1, 13, 8], broadcast_dims=[2, 3])
    T200 = fd.ops.cast(T199, dtype=DataType.Float)
    T216 = fd.ops.slice(T186, start_indices=[0, 0, 0, 0], end_indices=[1, 1, 13, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T232 = fd.ops.slice(T186, start_indices=[0, 0, 0, 4], end_indices=[1, 1, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T233 = fd.ops.cast(T232, dtype=DataType.Float)
    T234 = fd.ops.neg(T233)
    T235 = fd.ops.cast(T234, dtype=DataType.BFloat16)
    T236 = fd.ops.cat([T235, T216], dim=-1, manual_padding=0)
    T237 = fd.ops.cast(T186, dtype=DataType.Float)
    T238 = fd.ops.mul(T237, T193)
    T239 = fd.ops.cast(T236, dtype=DataType.Float)
    T240 = fd.ops.mul(T239, T200)
    T241 = fd.ops.add(T238, T240)
    T242 = fd.ops.cast(T241, dtype=DataType.BFloat16)
    T243 = fd.ops.cat([T27, T172], dim=-1, manual_padding=0)
    T249 = fd.ops.broadcast_in_dim(T242, shape=[1, 5, 13, 8], broadcast_dims=[0, 1, 2, 3])
    T250 = fd.ops.cat([T86, T249], dim=-1, manual_padding=0)
    fd.add_output(T243)
    fd.add_output(T250)
    fd.add_output(T102)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 100), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 36), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 120), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
