# Seed 003 (nvFuser PR "Forward full op"): the Llama-3 (8B) RoPE backward from LitGPT
# through Thunder. Inputs: cos [1, S, 128], grad of the roped q and of the expanded k
# [1, 32, S, 128], sin [1, S, 128] (bf16); S = 16. rotate_half's backward is two slices,
# a negation and two pads; v gets no gradient (a `full` of zeros) and neither does the
# pass-through part of q (a second `full`); k and v are summed back over the 4 query
# heads per group; q, k, v gradients are concatenated on dim 2 ([1, 8, 6, S, 128]),
# permuted and reshaped to the qkv gradient [1, S, 6144].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 16, 128], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, 32, 16, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[1, 32, 16, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.define_tensor(shape=[1, 16, 128], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T4 = fd.ops.broadcast_in_dim(T0, shape=[1, 32, 16, 128], broadcast_dims=[0, 2, 3])
    T5 = fd.ops.broadcast_in_dim(T3, shape=[1, 32, 16, 128], broadcast_dims=[0, 2, 3])
    S6 = fd.define_scalar(0.0, dtype=DataType.Double)
    T7 = fd.ops.full(shape=[1, 32, 16, 128], fill_value=S6, dtype=DataType.BFloat16)
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.cast(T1, dtype=DataType.Float)
    T10 = fd.ops.cast(T5, dtype=DataType.Float)
    T11 = fd.ops.mul(T9, T10)
    T12 = fd.ops.cast(T11, dtype=DataType.BFloat16)
    T13 = fd.ops.slice(T12, start_indices=[0, 0, 0, 64], end_indices=[1, 32, 16, 128], strides=[1, 1, 1, 1])
    T14 = fd.ops.pad(T13, [0, 64, 0, 0, 0, 0, 0, 0])
    T15 = fd.ops.slice(T12, start_indices=[0, 0, 0, 0], end_indices=[1, 32, 16, 64], strides=[1, 1, 1, 1])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.neg(T16)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    T19 = fd.ops.pad(T18, [64, 0, 0, 0, 0, 0, 0, 0])
    T20 = fd.ops.cast(T14, dtype=DataType.Float)
    T21 = fd.ops.cast(T19, dtype=DataType.Float)
    T22 = fd.ops.add(T20, T21)
    T23 = fd.ops.cast(T4, dtype=DataType.Float)
    T24 = fd.ops.mul(T9, T23)
    T25 = fd.ops.add(T24, T22)
    T26 = fd.ops.add(T8, T25)
    T27 = fd.ops.cast(T26, dtype=DataType.BFloat16)
    T28 = fd.ops.reshape(T27, new_shape=[1, 8, 4, 16, 128])
    T29 = fd.ops.cast(T2, dtype=DataType.Float)
    T30 = fd.ops.cast(T5, dtype=DataType.Float)
    T31 = fd.ops.mul(T29, T30)
    T32 = fd.ops.cast(T31, dtype=DataType.BFloat16)
    T33 = fd.ops.slice(T32, start_indices=[0, 0, 0, 64], end_indices=[1, 32, 16, 128], strides=[1, 1, 1, 1])
    T34 = fd.ops.pad(T33, [0, 64, 0, 0, 0, 0, 0, 0])
    T35 = fd.ops.slice(T32, start_indices=[0, 0, 0, 0], end_indices=[1, 32, 16, 64], strides=[1, 1, 1, 1])
    T36 = fd.ops.cast(T35, dtype=DataType.Float)
    T37 = fd.ops.neg(T36)
    T38 = fd.ops.cast(T37, dtype=DataType.BFloat16)
    T39 = fd.ops.pad(T38, [64, 0, 0, 0, 0, 0, 0, 0])
    T40 = fd.ops.cast(T34, dtype=DataType.Float)
    T41 = fd.ops.cast(T39, dtype=DataType.Float)
    T42 = fd.ops.add(T40, T41)
    T43 = fd.ops.cast(T4, dtype=DataType.Float)
    T44 = fd.ops.mul(T29, T43)
    T45 = fd.ops.add(T44, T42)
    T46 = fd.ops.cast(T45, dtype=DataType.BFloat16)
    T47 = fd.ops.reshape(T46, new_shape=[1, 8, 4, 16, 128])
    T48 = fd.ops.cast(T47, dtype=DataType.Float)
    T49 = fd.ops.sum(T48, dims=[2], keepdim=False, dtype=DataType.Null)
    T50 = fd.ops.cast(T49, dtype=DataType.BFloat16)
    T51 = fd.ops.broadcast_in_dim(T50, shape=[1, 8, 1, 16, 128], broadcast_dims=[0, 1, 3, 4])
    T52 = fd.ops.full(shape=[1, 32, 16, 128], fill_value=S6, dtype=DataType.BFloat16)
    T53 = fd.ops.reshape(T52, new_shape=[1, 8, 4, 16, 128])
    T54 = fd.ops.cast(T53, dtype=DataType.Float)
    T55 = fd.ops.sum(T54, dims=[2], keepdim=False, dtype=DataType.Null)
    T56 = fd.ops.cast(T55, dtype=DataType.BFloat16)
    T57 = fd.ops.broadcast_in_dim(T56, shape=[1, 8, 1, 16, 128], broadcast_dims=[0, 1, 3, 4])
    T58 = fd.ops.cat([T28, T51, T57], dim=2)
    T59 = fd.ops.permute(T58, dims=[0, 3, 1, 2, 4])
    T60 = fd.ops.reshape(T59, new_shape=[1, 16, 6144])
    fd.add_output(T60)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 16, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 32, 16, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 32, 16, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 16, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
