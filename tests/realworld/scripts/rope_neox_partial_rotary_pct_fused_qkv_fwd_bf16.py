# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on GPT-NeoX / Pythia attention (rotary_pct 0.25: only the first quarter of each
# head rotated) as in litGPT's rope_n_elem path of NVIDIA/Fuser benchmarks/python/test_rope.py
# (llama_hf with rope_n_elem < head_size): the fused projection [B, S, H*3*D] viewed as
# [B, S, H, 3*D] (NeoX keeps q, k, v interleaved per head), transposed, q/k/v sliced along
# the last axis; the first rope_n_elem features rotated (rotate-half on them, cos/sin
# [S, rope_n_elem] broadcast over batch and heads) and cat in front of the untouched rest.
# real-sizes: 24=256 13=2048 8=64 5=8 4=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 360], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T8 = fd.ops.reshape(T0, new_shape=[1, 13, 5, 72])
    T9 = fd.ops.permute(T8, dims=[0, 2, 1, 3])
    T25 = fd.ops.slice(T9, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T41 = fd.ops.slice(T9, start_indices=[0, 0, 0, 24], end_indices=[1, 5, 13, 48], strides=[1, 1, 1, 1], manual_normalization=0)
    T57 = fd.ops.slice(T9, start_indices=[0, 0, 0, 48], end_indices=[1, 5, 13, 72], strides=[1, 1, 1, 1], manual_normalization=0)
    T63 = fd.ops.broadcast_in_dim(T1, shape=[1, 5, 13, 8], broadcast_dims=[2, 3])
    T64 = fd.ops.cast(T63, dtype=DataType.Float)
    T70 = fd.ops.broadcast_in_dim(T2, shape=[1, 5, 13, 8], broadcast_dims=[2, 3])
    T71 = fd.ops.cast(T70, dtype=DataType.Float)
    T87 = fd.ops.slice(T25, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T103 = fd.ops.slice(T25, start_indices=[0, 0, 0, 8], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T119 = fd.ops.slice(T87, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T135 = fd.ops.slice(T87, start_indices=[0, 0, 0, 4], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T136 = fd.ops.cast(T135, dtype=DataType.Float)
    T137 = fd.ops.neg(T136)
    T138 = fd.ops.cast(T137, dtype=DataType.BFloat16)
    T139 = fd.ops.cat([T138, T119], dim=-1, manual_padding=0)
    T140 = fd.ops.cast(T87, dtype=DataType.Float)
    T141 = fd.ops.mul(T140, T64)
    T142 = fd.ops.cast(T139, dtype=DataType.Float)
    T143 = fd.ops.mul(T142, T71)
    T144 = fd.ops.add(T141, T143)
    T145 = fd.ops.cast(T144, dtype=DataType.BFloat16)
    T146 = fd.ops.cat([T145, T103], dim=-1, manual_padding=0)
    T162 = fd.ops.slice(T41, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T178 = fd.ops.slice(T41, start_indices=[0, 0, 0, 8], end_indices=[1, 5, 13, 24], strides=[1, 1, 1, 1], manual_normalization=0)
    T194 = fd.ops.slice(T162, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T210 = fd.ops.slice(T162, start_indices=[0, 0, 0, 4], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T211 = fd.ops.cast(T210, dtype=DataType.Float)
    T212 = fd.ops.neg(T211)
    T213 = fd.ops.cast(T212, dtype=DataType.BFloat16)
    T214 = fd.ops.cat([T213, T194], dim=-1, manual_padding=0)
    T215 = fd.ops.cast(T162, dtype=DataType.Float)
    T216 = fd.ops.mul(T215, T64)
    T217 = fd.ops.cast(T214, dtype=DataType.Float)
    T218 = fd.ops.mul(T217, T71)
    T219 = fd.ops.add(T216, T218)
    T220 = fd.ops.cast(T219, dtype=DataType.BFloat16)
    T221 = fd.ops.cat([T220, T178], dim=-1, manual_padding=0)
    fd.add_output(T146)
    fd.add_output(T221)
    fd.add_output(T57)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 360), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
