# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Qwen2-VL's multimodal rotary embedding (HF apply_multimodal_rotary_pos_emb) as
# Thunder hands it to nvFuser: cos and sin come per position stream ([3, B, S, D]: temporal,
# height, width ids of the image and text tokens); mrope_section [16, 24, 24] doubled over
# head_dim 128 picks stream i % 3 for the i-th chunk (six slices of the stream axis, squeezed
# and concatenated back to [B, S, D]), unsqueezed over heads; then q * cos + rotate_half(q) *
# sin for q (28 heads) and k (4 kv heads), in float and cast back to bf16.
# real-sizes: 7=28 11=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 7, 11, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 4, 11, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[3, 1, 11, 128], contiguity=[True, None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[3, 1, 11, 128], contiguity=[True, None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.ops.slice(T2, start_indices=[0, 0, 0, 0], end_indices=[1, 1, 11, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T5 = fd.ops.squeeze(T4, dims=[0], squeeze_expanded=True)
    T6 = fd.ops.slice(T2, start_indices=[1, 0, 0, 16], end_indices=[2, 1, 11, 40], strides=[1, 1, 1, 1], manual_normalization=0)
    T7 = fd.ops.squeeze(T6, dims=[0], squeeze_expanded=True)
    T8 = fd.ops.slice(T2, start_indices=[2, 0, 0, 40], end_indices=[3, 1, 11, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T9 = fd.ops.squeeze(T8, dims=[0], squeeze_expanded=True)
    T10 = fd.ops.slice(T2, start_indices=[0, 0, 0, 64], end_indices=[1, 1, 11, 80], strides=[1, 1, 1, 1], manual_normalization=0)
    T11 = fd.ops.squeeze(T10, dims=[0], squeeze_expanded=True)
    T12 = fd.ops.slice(T2, start_indices=[1, 0, 0, 80], end_indices=[2, 1, 11, 104], strides=[1, 1, 1, 1], manual_normalization=0)
    T13 = fd.ops.squeeze(T12, dims=[0], squeeze_expanded=True)
    T14 = fd.ops.slice(T2, start_indices=[2, 0, 0, 104], end_indices=[3, 1, 11, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T15 = fd.ops.squeeze(T14, dims=[0], squeeze_expanded=True)
    T16 = fd.ops.cat([T5, T7, T9, T11, T13, T15], dim=-1, manual_padding=0)
    T17 = fd.ops.broadcast_in_dim(T16, shape=[1, 1, 11, 128], broadcast_dims=[0, 2, 3])
    T18 = fd.ops.slice(T3, start_indices=[0, 0, 0, 0], end_indices=[1, 1, 11, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T19 = fd.ops.squeeze(T18, dims=[0], squeeze_expanded=True)
    T20 = fd.ops.slice(T3, start_indices=[1, 0, 0, 16], end_indices=[2, 1, 11, 40], strides=[1, 1, 1, 1], manual_normalization=0)
    T21 = fd.ops.squeeze(T20, dims=[0], squeeze_expanded=True)
    T22 = fd.ops.slice(T3, start_indices=[2, 0, 0, 40], end_indices=[3, 1, 11, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T23 = fd.ops.squeeze(T22, dims=[0], squeeze_expanded=True)
    T24 = fd.ops.slice(T3, start_indices=[0, 0, 0, 64], end_indices=[1, 1, 11, 80], strides=[1, 1, 1, 1], manual_normalization=0)
    T25 = fd.ops.squeeze(T24, dims=[0], squeeze_expanded=True)
    T26 = fd.ops.slice(T3, start_indices=[1, 0, 0, 80], end_indices=[2, 1, 11, 104], strides=[1, 1, 1, 1], manual_normalization=0)
    T27 = fd.ops.squeeze(T26, dims=[0], squeeze_expanded=True)
    T28 = fd.ops.slice(T3, start_indices=[2, 0, 0, 104], end_indices=[3, 1, 11, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T29 = fd.ops.squeeze(T28, dims=[0], squeeze_expanded=True)
    T30 = fd.ops.cat([T19, T21, T23, T25, T27, T29], dim=-1, manual_padding=0)
    T31 = fd.ops.broadcast_in_dim(T30, shape=[1, 1, 11, 128], broadcast_dims=[0, 2, 3])
    T32 = fd.ops.broadcast_in_dim(T17, shape=[1, 7, 11, 128], broadcast_dims=[0, 1, 2, 3])
    T33 = fd.ops.broadcast_in_dim(T31, shape=[1, 7, 11, 128], broadcast_dims=[0, 1, 2, 3])
    T34 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[1, 7, 11, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T35 = fd.ops.slice(T0, start_indices=[0, 0, 0, 64], end_indices=[1, 7, 11, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T36 = fd.ops.cast(T35, dtype=DataType.Float)
    T37 = fd.ops.neg(T36)
    T38 = fd.ops.cast(T37, dtype=DataType.BFloat16)
    T39 = fd.ops.cat([T38, T34], dim=-1, manual_padding=0)
    T40 = fd.ops.cast(T0, dtype=DataType.Float)
    T41 = fd.ops.cast(T32, dtype=DataType.Float)
    T42 = fd.ops.mul(T40, T41)
    T43 = fd.ops.cast(T39, dtype=DataType.Float)
    T44 = fd.ops.cast(T33, dtype=DataType.Float)
    T45 = fd.ops.mul(T43, T44)
    T46 = fd.ops.add(T42, T45)
    T47 = fd.ops.cast(T46, dtype=DataType.BFloat16)
    T48 = fd.ops.broadcast_in_dim(T17, shape=[1, 4, 11, 128], broadcast_dims=[0, 1, 2, 3])
    T49 = fd.ops.broadcast_in_dim(T31, shape=[1, 4, 11, 128], broadcast_dims=[0, 1, 2, 3])
    T50 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[1, 4, 11, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T51 = fd.ops.slice(T1, start_indices=[0, 0, 0, 64], end_indices=[1, 4, 11, 128], strides=[1, 1, 1, 1], manual_normalization=0)
    T52 = fd.ops.cast(T51, dtype=DataType.Float)
    T53 = fd.ops.neg(T52)
    T54 = fd.ops.cast(T53, dtype=DataType.BFloat16)
    T55 = fd.ops.cat([T54, T50], dim=-1, manual_padding=0)
    T56 = fd.ops.cast(T1, dtype=DataType.Float)
    T57 = fd.ops.cast(T48, dtype=DataType.Float)
    T58 = fd.ops.mul(T56, T57)
    T59 = fd.ops.cast(T55, dtype=DataType.Float)
    T60 = fd.ops.cast(T49, dtype=DataType.Float)
    T61 = fd.ops.mul(T59, T60)
    T62 = fd.ops.add(T58, T61)
    T63 = fd.ops.cast(T62, dtype=DataType.BFloat16)
    fd.add_output(T47)
    fd.add_output(T63)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.testing.make_tensor((1, 7, 11, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 4, 11, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((3, 1, 11, 128), dtype=torch.bfloat16, device='cuda:0', low=-1, high=1),
    torch.testing.make_tensor((3, 1, 11, 128), dtype=torch.bfloat16, device='cuda:0', low=-1, high=1),
]
fd.execute(inputs)
