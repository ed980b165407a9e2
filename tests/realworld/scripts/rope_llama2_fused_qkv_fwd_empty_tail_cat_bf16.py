# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on llama_2_7b_hf_rope_fwd in NVIDIA/Fuser benchmarks/python/test_rope.py (litGPT's
# CausalSelfAttention rope as Thunder hands it to nvFuser, multi-head attention): the fused
# qkv projection [B, S, H*3*D] reshaped to [B, S, H, 3, D] and permuted to [B, H, 3, S, D],
# q and k sliced out along the 3-axis and reshaped to [B, H, S, D]; rotate-half (the upper
# half negated in float, cast back to bf16, cat before the lower half), times cos/sin given
# as [S, D] and broadcast twice; rope_n_elem == head_size, so the pass-through tail is an
# empty slice [.., D:D] cat after the rotated part.
# real-sizes: 16=128 13=2048 8=64 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 240], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T9 = fd.ops.reshape(T0, new_shape=[2, 13, 5, 3, 16])
    T10 = fd.ops.permute(T9, dims=[0, 2, 3, 1, 4])
    T29 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0, 0], end_indices=[2, 5, 1, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T48 = fd.ops.slice(T10, start_indices=[0, 0, 1, 0, 0], end_indices=[2, 5, 2, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T54 = fd.ops.reshape(T29, new_shape=[2, 5, 13, 16])
    T60 = fd.ops.reshape(T48, new_shape=[2, 5, 13, 16])
    T65 = fd.ops.broadcast_in_dim(T1, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T70 = fd.ops.broadcast_in_dim(T2, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T76 = fd.ops.broadcast_in_dim(T65, shape=[2, 5, 13, 16], broadcast_dims=[1, 2, 3])
    T82 = fd.ops.broadcast_in_dim(T70, shape=[2, 5, 13, 16], broadcast_dims=[1, 2, 3])
    T83 = fd.ops.cast(T76, dtype=DataType.Float)
    T84 = fd.ops.cast(T82, dtype=DataType.Float)
    T100 = fd.ops.slice(T54, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T116 = fd.ops.slice(T54, start_indices=[0, 0, 0, 8], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T117 = fd.ops.cast(T116, dtype=DataType.Float)
    T118 = fd.ops.neg(T117)
    T119 = fd.ops.cast(T118, dtype=DataType.BFloat16)
    T120 = fd.ops.cat([T119, T100], dim=-1, manual_padding=0)
    T121 = fd.ops.cast(T54, dtype=DataType.Float)
    T122 = fd.ops.mul(T121, T83)
    T123 = fd.ops.cast(T120, dtype=DataType.Float)
    T124 = fd.ops.mul(T123, T84)
    T125 = fd.ops.add(T122, T124)
    T126 = fd.ops.cast(T125, dtype=DataType.BFloat16)
    T142 = fd.ops.slice(T60, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T158 = fd.ops.slice(T60, start_indices=[0, 0, 0, 8], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T159 = fd.ops.cast(T158, dtype=DataType.Float)
    T160 = fd.ops.neg(T159)
    T161 = fd.ops.cast(T160, dtype=DataType.BFloat16)
    T162 = fd.ops.cat([T161, T142], dim=-1, manual_padding=0)
    T163 = fd.ops.cast(T60, dtype=DataType.Float)
    T164 = fd.ops.mul(T163, T83)
    T165 = fd.ops.cast(T162, dtype=DataType.Float)
    T166 = fd.ops.mul(T165, T84)
    T167 = fd.ops.add(T164, T166)
    T168 = fd.ops.cast(T167, dtype=DataType.BFloat16)
    T184 = fd.ops.slice(T54, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 0], strides=[1, 1, 1, 1], manual_normalization=0)
    T185 = fd.ops.cat([T126, T184], dim=-1, manual_padding=0)
    T201 = fd.ops.slice(T60, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 0], strides=[1, 1, 1, 1], manual_normalization=0)
    T202 = fd.ops.cat([T168, T201], dim=-1, manual_padding=0)
    fd.add_output(T185)
    fd.add_output(T202)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 240), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
