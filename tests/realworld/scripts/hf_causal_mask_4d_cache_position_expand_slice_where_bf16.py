# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF's _prepare_4d_causal_attention_mask_with_cache_position (Llama/Mistral
# sdpa/eager mask building) as a Thunder trace hands it to nvFuser: full((S, T), lowest) in
# bf16, multiplied by arange(T) > cache_position.reshape(-1, 1), unsqueezed twice and
# expanded to [B, 1, S, T] (fd.ops.expand), a full-range slice [..., :T], the int64
# [B, T] padding mask broadcast to [B, 1, S, T] and added, the sum compared with 0 and the
# padded positions filled with the lowest bf16 value by where.
# real-sizes: 13=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    S2 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T6 = fd.ops.full(shape=[13, 13], fill_value=S2, dtype=DataType.BFloat16)
    S7 = fd.define_scalar(13, dtype=DataType.Int)
    S8 = fd.define_scalar(0, dtype=DataType.Int)
    S9 = fd.define_scalar(1, dtype=DataType.Int)
    T10 = fd.ops.iota(S7, S8, S9, dtype=DataType.Int)
    T14 = fd.ops.broadcast_in_dim(T10, shape=[13, 13], broadcast_dims=[1])
    T18 = fd.ops.reshape(T1, new_shape=[13, 1])
    T22 = fd.ops.broadcast_in_dim(T18, shape=[13, 13], broadcast_dims=[0, 1])
    T23 = fd.ops.gt(T14, T22)
    T24 = fd.ops.cast(T6, dtype=DataType.Float)
    T25 = fd.ops.cast(T23, dtype=DataType.Float)
    T26 = fd.ops.mul(T24, T25)
    T27 = fd.ops.cast(T26, dtype=DataType.BFloat16)
    T33 = fd.ops.broadcast_in_dim(T27, shape=[1, 1, 13, 13], broadcast_dims=[2, 3])
    T39 = fd.ops.expand(T33, shape=[2, 1, 13, 13])
    T55 = fd.ops.slice(T39, start_indices=[0, 0, 0, 0], end_indices=[2, 1, 13, 13], strides=[1, 1, 1, 1], manual_normalization=0)
    T61 = fd.ops.broadcast_in_dim(T0, shape=[2, 1, 1, 13], broadcast_dims=[0, 3])
    T67 = fd.ops.broadcast_in_dim(T61, shape=[2, 1, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T68 = fd.ops.cast(T55, dtype=DataType.Float)
    T69 = fd.ops.cast(T67, dtype=DataType.Float)
    T70 = fd.ops.add(T68, T69)
    S71 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T72 = fd.ops.eq(T70, S71)
    T73 = fd.ops.cast(T55, dtype=DataType.Float)
    T74 = fd.ops.where(T72, S2, T73)
    T75 = fd.ops.cast(T74, dtype=DataType.BFloat16)
    fd.add_output(T75)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 2, (2, 13), dtype=torch.int64, device='cuda:0'),
    torch.arange(13, device='cuda:0'),
]
fd.execute(inputs)
