# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hf_qwen2_rope_fwd in NVIDIA/Fuser benchmarks/python/test_rope.py (HF Qwen2
# attention as Thunder hands it over: apply_rotary_pos_emb then repeat_kv): separate q
# [1, S, Hq*D] and k/v [1, S, Hkv*D] projections reshaped to heads and transposed, cos/sin
# [1, S, D] (batch-shaped, HF's position-id gather done outside) broadcast to [1, 1, S, D]
# and on to each head count; rotate-half in float/bf16 as Thunder writes it; the rotated
# key and the value repeated Hq/Hkv times through a 5-D [1, Hkv, 1, S, D] ->
# [1, Hkv, R, S, D] broadcast and a reshape to [1, Hq, S, D].
# real-sizes: 16=128 13=4096 8=64 21=28 3=4
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 336], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 48], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 13, 48], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 13, 16], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 13, 16], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T10 = fd.ops.reshape(T0, new_shape=[1, 13, 21, 16])
    T11 = fd.ops.permute(T10, dims=[0, 2, 1, 3])
    T17 = fd.ops.reshape(T1, new_shape=[1, 13, 3, 16])
    T18 = fd.ops.permute(T17, dims=[0, 2, 1, 3])
    T24 = fd.ops.reshape(T2, new_shape=[1, 13, 3, 16])
    T25 = fd.ops.permute(T24, dims=[0, 2, 1, 3])
    T31 = fd.ops.broadcast_in_dim(T3, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T37 = fd.ops.broadcast_in_dim(T4, shape=[1, 1, 13, 16], broadcast_dims=[0, 2, 3])
    T43 = fd.ops.broadcast_in_dim(T31, shape=[1, 21, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T44 = fd.ops.cast(T11, dtype=DataType.Float)
    T45 = fd.ops.cast(T43, dtype=DataType.Float)
    T46 = fd.ops.mul(T44, T45)
    T62 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[1, 21, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T78 = fd.ops.slice(T11, start_indices=[0, 0, 0, 8], end_indices=[1, 21, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T79 = fd.ops.cast(T78, dtype=DataType.Float)
    T80 = fd.ops.neg(T79)
    T81 = fd.ops.cast(T80, dtype=DataType.BFloat16)
    T82 = fd.ops.cat([T81, T62], dim=-1, manual_padding=0)
    T88 = fd.ops.broadcast_in_dim(T37, shape=[1, 21, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T89 = fd.ops.cast(T82, dtype=DataType.Float)
    T90 = fd.ops.cast(T88, dtype=DataType.Float)
    T91 = fd.ops.mul(T89, T90)
    T92 = fd.ops.add(T46, T91)
    T93 = fd.ops.cast(T92, dtype=DataType.BFloat16)
    T99 = fd.ops.broadcast_in_dim(T31, shape=[1, 3, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T100 = fd.ops.cast(T18, dtype=DataType.Float)
    T101 = fd.ops.cast(T99, dtype=DataType.Float)
    T102 = fd.ops.mul(T100, T101)
    T118 = fd.ops.slice(T18, start_indices=[0, 0, 0, 0], end_indices=[1, 3, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T134 = fd.ops.slice(T18, start_indices=[0, 0, 0, 8], end_indices=[1, 3, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T135 = fd.ops.cast(T134, dtype=DataType.Float)
    T136 = fd.ops.neg(T135)
    T137 = fd.ops.cast(T136, dtype=DataType.BFloat16)
    T138 = fd.ops.cat([T137, T118], dim=-1, manual_padding=0)
    T144 = fd.ops.broadcast_in_dim(T37, shape=[1, 3, 13, 16], broadcast_dims=[0, 1, 2, 3])
    T145 = fd.ops.cast(T138, dtype=DataType.Float)
    T146 = fd.ops.cast(T144, dtype=DataType.Float)
    T147 = fd.ops.mul(T145, T146)
    T148 = fd.ops.add(T102, T147)
    T149 = fd.ops.cast(T148, dtype=DataType.BFloat16)
    T156 = fd.ops.broadcast_in_dim(T149, shape=[1, 3, 1, 13, 16], broadcast_dims=[0, 1, 3, 4])
    T163 = fd.ops.broadcast_in_dim(T156, shape=[1, 3, 7, 13, 16], broadcast_dims=[0, 1, 2, 3, 4])
    T169 = fd.ops.reshape(T163, new_shape=[1, 21, 13, 16])
    T176 = fd.ops.broadcast_in_dim(T25, shape=[1, 3, 1, 13, 16], broadcast_dims=[0, 1, 3, 4])
    T183 = fd.ops.broadcast_in_dim(T176, shape=[1, 3, 7, 13, 16], broadcast_dims=[0, 1, 2, 3, 4])
    T189 = fd.ops.reshape(T183, new_shape=[1, 21, 13, 16])
    fd.add_output(T93)
    fd.add_output(T169)
    fd.add_output(T189)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 336), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
