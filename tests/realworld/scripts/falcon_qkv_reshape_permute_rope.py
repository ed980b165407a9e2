# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3688 and #3505 (Thunder CI, Falcon/GPT-NeoX style
# attention input): a fused qkv projection [B, T, H*3*D] reshaped to [B, T, H, 3, D],
# permuted to [B, H, 3, T, D], sliced into q, k, v with manual_normalization=0,
# each reshaped to [B, H, T, D]; a partial rotary embedding on the first half of the
# head dim (slice, neg, cat, mul by cos/sin sliced to T, add) and the untouched half
# cat back on. bf16 with float compute; cos/sin are longer than T and sliced.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id67(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 5, 96], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[8, 4], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[8, 4], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.slice(T1, start_indices=[0, 0], end_indices=[5, 4], strides=[1, 1], manual_normalization=0)
    T4 = fd.ops.slice(T2, start_indices=[0, 0], end_indices=[5, 4], strides=[1, 1], manual_normalization=0)
    T5 = fd.ops.reshape(T0, new_shape=[2, 5, 4, 3, 8])
    T6 = fd.ops.permute(T5, dims=[0, 2, 3, 1, 4])
    T7 = fd.ops.slice(T6, start_indices=[0, 0, 0, 0, 0], end_indices=[2, 4, 1, 5, 8], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T8 = fd.ops.slice(T6, start_indices=[0, 0, 1, 0, 0], end_indices=[2, 4, 2, 5, 8], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T9 = fd.ops.slice(T6, start_indices=[0, 0, 2, 0, 0], end_indices=[2, 4, 3, 5, 8], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T10 = fd.ops.reshape(T7, new_shape=[2, 4, 5, 8])
    T11 = fd.ops.reshape(T8, new_shape=[2, 4, 5, 8])
    T12 = fd.ops.reshape(T9, new_shape=[2, 4, 5, 8])
    T13 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 5, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T14 = fd.ops.slice(T13, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 5, 2], strides=[1, 1, 1, 1], manual_normalization=0)
    T15 = fd.ops.slice(T13, start_indices=[0, 0, 0, 2], end_indices=[2, 4, 5, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.neg(T16)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    T19 = fd.ops.cat([T18, T14], dim=-1, manual_padding=0)
    T20 = fd.ops.broadcast_in_dim(T3, shape=[2, 4, 5, 4], broadcast_dims=[2, 3])
    T21 = fd.ops.cast(T13, dtype=DataType.Float)
    T22 = fd.ops.cast(T20, dtype=DataType.Float)
    T23 = fd.ops.mul(T21, T22)
    T24 = fd.ops.broadcast_in_dim(T4, shape=[2, 4, 5, 4], broadcast_dims=[2, 3])
    T25 = fd.ops.cast(T19, dtype=DataType.Float)
    T26 = fd.ops.cast(T24, dtype=DataType.Float)
    T27 = fd.ops.mul(T25, T26)
    T28 = fd.ops.add(T23, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    T30 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 5, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T31 = fd.ops.slice(T30, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 5, 2], strides=[1, 1, 1, 1], manual_normalization=0)
    T32 = fd.ops.slice(T30, start_indices=[0, 0, 0, 2], end_indices=[2, 4, 5, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T33 = fd.ops.cast(T32, dtype=DataType.Float)
    T34 = fd.ops.neg(T33)
    T35 = fd.ops.cast(T34, dtype=DataType.BFloat16)
    T36 = fd.ops.cat([T35, T31], dim=-1, manual_padding=0)
    T37 = fd.ops.cast(T30, dtype=DataType.Float)
    T38 = fd.ops.mul(T37, T22)
    T39 = fd.ops.cast(T36, dtype=DataType.Float)
    T40 = fd.ops.mul(T39, T26)
    T41 = fd.ops.add(T38, T40)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    T43 = fd.ops.slice(T10, start_indices=[0, 0, 0, 4], end_indices=[2, 4, 5, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T44 = fd.ops.cat([T29, T43], dim=-1, manual_padding=0)
    T45 = fd.ops.slice(T11, start_indices=[0, 0, 0, 4], end_indices=[2, 4, 5, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T46 = fd.ops.cat([T42, T45], dim=-1, manual_padding=0)
    fd.add_output(T12)
    fd.add_output(T44)
    fd.add_output(T46)


with FusionDefinition() as fd:
    nvfuser_fusion_id67(fd)

inputs = [
    torch.testing.make_tensor((2, 5, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 4), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((8, 4), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
