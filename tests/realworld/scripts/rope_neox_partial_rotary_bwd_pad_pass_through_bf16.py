# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward Thunder derives for GPT-NeoX-style partial rotary embeddings
# (rotary_pct 0.25, litGPT's rope_n_elem path in NVIDIA/Fuser benchmarks/python/test_rope.py):
# the q and k grads split into the rotated features and the pass-through rest (the
# backward of the cat), rotate-half's backward on the first part (slices of g*sin padded
# into swapped halves, one negated, plus g*cos), both parts padded back to head_size
# (widths (0, D - n) and (n, 0)) and summed; q, k and v grads cat along the last axis as
# NeoX's per-head [3*D] layout, transposed and flattened to [B, S, H*3*D].
# real-sizes: 24=256 13=2048 8=64 5=8 4=32 16=192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 5, 13, 24], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 5, 13, 24], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 5, 13, 24], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T10 = fd.ops.broadcast_in_dim(T3, shape=[1, 5, 13, 8], broadcast_dims=[2, 3])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T17 = fd.ops.broadcast_in_dim(T4, shape=[1, 5, 13, 8], broadcast_dims=[2, 3])
    T18 = fd.ops.cast(T17, dtype=DataType.Float)
    T34 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T50 = fd.ops.slice(T0, start_indices=[0, 0, 0, 8], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T51 = fd.ops.cast(T34, dtype=DataType.Float)
    T52 = fd.ops.mul(T51, T18)
    T68 = fd.ops.slice(T52, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T84 = fd.ops.slice(T52, start_indices=[0, 0, 0, 4], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    S85 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T95 = fd.ops.pad(T84, [0, 4, 0, 0, 0, 0, 0, 0], S85)
    T96 = fd.ops.neg(T68)
    S97 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T107 = fd.ops.pad(T96, [4, 0, 0, 0, 0, 0, 0, 0], S97)
    T108 = fd.ops.mul(T51, T11)
    T109 = fd.ops.add(T108, T95)
    T110 = fd.ops.add(T109, T107)
    T111 = fd.ops.cast(T110, dtype=DataType.BFloat16)
    S112 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T122 = fd.ops.pad(T111, [0, 16, 0, 0, 0, 0, 0, 0], S112)
    S123 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T133 = fd.ops.pad(T50, [8, 0, 0, 0, 0, 0, 0, 0], S123)
    T134 = fd.ops.cast(T122, dtype=DataType.Float)
    T135 = fd.ops.cast(T133, dtype=DataType.Float)
    T136 = fd.ops.add(T134, T135)
    T137 = fd.ops.cast(T136, dtype=DataType.BFloat16)
    T153 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T169 = fd.ops.slice(T1, start_indices=[0, 0, 0, 8], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T170 = fd.ops.cast(T153, dtype=DataType.Float)
    T171 = fd.ops.mul(T170, T18)
    T187 = fd.ops.slice(T171, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T203 = fd.ops.slice(T171, start_indices=[0, 0, 0, 4], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    S204 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T214 = fd.ops.pad(T203, [0, 4, 0, 0, 0, 0, 0, 0], S204)
    T215 = fd.ops.neg(T187)
    S216 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T226 = fd.ops.pad(T215, [4, 0, 0, 0, 0, 0, 0, 0], S216)
    T227 = fd.ops.mul(T170, T11)
    T228 = fd.ops.add(T227, T214)
    T229 = fd.ops.add(T228, T226)
    T230 = fd.ops.cast(T229, dtype=DataType.BFloat16)
    S231 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T241 = fd.ops.pad(T230, [0, 16, 0, 0, 0, 0, 0, 0], S231)
    S242 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T252 = fd.ops.pad(T169, [8, 0, 0, 0, 0, 0, 0, 0], S242)
    T253 = fd.ops.cast(T241, dtype=DataType.Float)
    T254 = fd.ops.cast(T252, dtype=DataType.Float)
    T255 = fd.ops.add(T253, T254)
    T256 = fd.ops.cast(T255, dtype=DataType.BFloat16)
    T257 = fd.ops.cat([T137, T256, T2], dim=-1, manual_padding=0)
    T258 = fd.ops.permute(T257, dims=[0, 2, 1, 3])
    T263 = fd.ops.reshape(T258, new_shape=[1, 13, 360])
    fd.add_output(T263)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 5, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 5, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 5, 13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
