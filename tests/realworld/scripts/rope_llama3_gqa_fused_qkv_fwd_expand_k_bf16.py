# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on llama_3_8B_rope_fwd in NVIDIA/Fuser benchmarks/python/test_rope.py (litGPT's
# grouped-query attention rope as Thunder hands it over): the fused projection
# [B, S, G*(R+2)*D] reshaped to [B, S, G, R+2, D] (R query heads, one key and one value per
# group) and permuted to [B, G, R+2, S, D]; the R query slots and the key slot sliced out,
# the key broadcast from [B, G, 1, S, D] to [B, G, R, S, D] (the expand before SDPA) and both
# reshaped to [B, G*R, S, D]; rotate-half with cos/sin [S, D], then the empty pass-through
# slice cat after the rotated part.
# real-sizes: 16=128 13=4096 8=64 7=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 672], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T9 = fd.ops.reshape(T0, new_shape=[2, 13, 7, 6, 16])
    T10 = fd.ops.permute(T9, dims=[0, 2, 3, 1, 4])
    T29 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0, 0], end_indices=[2, 7, 4, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T48 = fd.ops.slice(T10, start_indices=[0, 0, 4, 0, 0], end_indices=[2, 7, 5, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T55 = fd.ops.broadcast_in_dim(T48, shape=[2, 7, 4, 13, 16], broadcast_dims=[0, 1, 2, 3, 4])
    T61 = fd.ops.reshape(T29, new_shape=[2, 28, 13, 16])
    T67 = fd.ops.reshape(T55, new_shape=[2, 28, 13, 16])
    T72 = fd.ops.broadcast_in_dim(T1, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T77 = fd.ops.broadcast_in_dim(T2, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T83 = fd.ops.broadcast_in_dim(T72, shape=[2, 28, 13, 16], broadcast_dims=[1, 2, 3])
    T89 = fd.ops.broadcast_in_dim(T77, shape=[2, 28, 13, 16], broadcast_dims=[1, 2, 3])
    T90 = fd.ops.cast(T83, dtype=DataType.Float)
    T91 = fd.ops.cast(T89, dtype=DataType.Float)
    T107 = fd.ops.slice(T61, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T123 = fd.ops.slice(T61, start_indices=[0, 0, 0, 8], end_indices=[2, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T124 = fd.ops.cast(T123, dtype=DataType.Float)
    T125 = fd.ops.neg(T124)
    T126 = fd.ops.cast(T125, dtype=DataType.BFloat16)
    T127 = fd.ops.cat([T126, T107], dim=-1, manual_padding=0)
    T128 = fd.ops.cast(T61, dtype=DataType.Float)
    T129 = fd.ops.mul(T128, T90)
    T130 = fd.ops.cast(T127, dtype=DataType.Float)
    T131 = fd.ops.mul(T130, T91)
    T132 = fd.ops.add(T129, T131)
    T133 = fd.ops.cast(T132, dtype=DataType.BFloat16)
    T149 = fd.ops.slice(T67, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T165 = fd.ops.slice(T67, start_indices=[0, 0, 0, 8], end_indices=[2, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T166 = fd.ops.cast(T165, dtype=DataType.Float)
    T167 = fd.ops.neg(T166)
    T168 = fd.ops.cast(T167, dtype=DataType.BFloat16)
    T169 = fd.ops.cat([T168, T149], dim=-1, manual_padding=0)
    T170 = fd.ops.cast(T67, dtype=DataType.Float)
    T171 = fd.ops.mul(T170, T90)
    T172 = fd.ops.cast(T169, dtype=DataType.Float)
    T173 = fd.ops.mul(T172, T91)
    T174 = fd.ops.add(T171, T173)
    T175 = fd.ops.cast(T174, dtype=DataType.BFloat16)
    T191 = fd.ops.slice(T61, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 0], strides=[1, 1, 1, 1], manual_normalization=0)
    T192 = fd.ops.cat([T133, T191], dim=-1, manual_padding=0)
    T208 = fd.ops.slice(T67, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 0], strides=[1, 1, 1, 1], manual_normalization=0)
    T209 = fd.ops.cat([T175, T208], dim=-1, manual_padding=0)
    fd.add_output(T192)
    fd.add_output(T209)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 672), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
