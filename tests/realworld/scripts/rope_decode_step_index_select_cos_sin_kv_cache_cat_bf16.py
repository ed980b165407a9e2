# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder-compiled decode step of litGPT / HF Llama inference (cf. NVIDIA/Fuser
# benchmarks/python/test_llama4_inference.py and tests/python/llama_inf_tests/graph_1.py,
# the attention prologue of one generated token): q, k, v projections of one token
# [B, 1, H*D] reshaped to heads and transposed; the rotary rows for the current position
# gathered from the cos/sin caches [max_seq, D] with index_select by an int64 input_pos [1];
# rotate-half on q and k; the rotated key and the value appended to the [B, Hkv, P, D]
# caches with cat along the sequence axis.
# real-sizes: 29=8192 16=128 14=4096 13=4095 12=32 8=64 3=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1, 192], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 1, 48], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 1, 48], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[29, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[29, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T6 = fd.define_tensor(shape=[1, 3, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T7 = fd.define_tensor(shape=[1, 3, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T8 = fd.ops.index_select(T3, T5, dim=0)
    T9 = fd.ops.index_select(T4, T5, dim=0)
    T15 = fd.ops.reshape(T0, new_shape=[1, 1, 12, 16])
    T16 = fd.ops.permute(T15, dims=[0, 2, 1, 3])
    T22 = fd.ops.reshape(T1, new_shape=[1, 1, 3, 16])
    T23 = fd.ops.permute(T22, dims=[0, 2, 1, 3])
    T29 = fd.ops.reshape(T2, new_shape=[1, 1, 3, 16])
    T30 = fd.ops.permute(T29, dims=[0, 2, 1, 3])
    T36 = fd.ops.broadcast_in_dim(T8, shape=[1, 12, 1, 16], broadcast_dims=[2, 3])
    T37 = fd.ops.cast(T36, dtype=DataType.Float)
    T43 = fd.ops.broadcast_in_dim(T9, shape=[1, 12, 1, 16], broadcast_dims=[2, 3])
    T44 = fd.ops.cast(T43, dtype=DataType.Float)
    T60 = fd.ops.slice(T16, start_indices=[0, 0, 0, 0], end_indices=[1, 12, 1, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T76 = fd.ops.slice(T16, start_indices=[0, 0, 0, 8], end_indices=[1, 12, 1, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T77 = fd.ops.cast(T76, dtype=DataType.Float)
    T78 = fd.ops.neg(T77)
    T79 = fd.ops.cast(T78, dtype=DataType.BFloat16)
    T80 = fd.ops.cat([T79, T60], dim=-1, manual_padding=0)
    T81 = fd.ops.cast(T16, dtype=DataType.Float)
    T82 = fd.ops.mul(T81, T37)
    T83 = fd.ops.cast(T80, dtype=DataType.Float)
    T84 = fd.ops.mul(T83, T44)
    T85 = fd.ops.add(T82, T84)
    T86 = fd.ops.cast(T85, dtype=DataType.BFloat16)
    T92 = fd.ops.broadcast_in_dim(T8, shape=[1, 3, 1, 16], broadcast_dims=[2, 3])
    T93 = fd.ops.cast(T92, dtype=DataType.Float)
    T99 = fd.ops.broadcast_in_dim(T9, shape=[1, 3, 1, 16], broadcast_dims=[2, 3])
    T100 = fd.ops.cast(T99, dtype=DataType.Float)
    T116 = fd.ops.slice(T23, start_indices=[0, 0, 0, 0], end_indices=[1, 3, 1, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T132 = fd.ops.slice(T23, start_indices=[0, 0, 0, 8], end_indices=[1, 3, 1, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T133 = fd.ops.cast(T132, dtype=DataType.Float)
    T134 = fd.ops.neg(T133)
    T135 = fd.ops.cast(T134, dtype=DataType.BFloat16)
    T136 = fd.ops.cat([T135, T116], dim=-1, manual_padding=0)
    T137 = fd.ops.cast(T23, dtype=DataType.Float)
    T138 = fd.ops.mul(T137, T93)
    T139 = fd.ops.cast(T136, dtype=DataType.Float)
    T140 = fd.ops.mul(T139, T100)
    T141 = fd.ops.add(T138, T140)
    T142 = fd.ops.cast(T141, dtype=DataType.BFloat16)
    T143 = fd.ops.cat([T6, T142], dim=2, manual_padding=0)
    T144 = fd.ops.cat([T7, T30], dim=2, manual_padding=0)
    fd.add_output(T86)
    fd.add_output(T143)
    fd.add_output(T144)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 1, 192), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 1, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 1, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((29, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((29, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.tensor([13], dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((1, 3, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 3, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
