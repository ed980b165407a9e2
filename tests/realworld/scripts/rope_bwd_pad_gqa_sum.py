# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of Thunder's HF-Llama rotary embedding + repeat_kv (the
# litgpt/HF rope of NVIDIA/Fuser benchmarks/python/test_rope.py, backward direction): the
# key gradient [B, Hq, S, D] reshaped to [B, Hkv, rep, S, D] and summed over the repeat dim
# (the backward of the GQA expand), then rotate_half's backward as Thunder writes it: the
# backward of cat is slice, the backward of slicing the halves is pad, so
# dx = g*cos + pad(slice(g*sin, hi), [0, D/2]) + pad(-slice(g*sin, lo), [D/2, 0]);
# finally the heads are transposed back and flattened to [B, S, H*D]. bf16 in and out.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id14(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4, 6, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 4, 6, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[6, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[6, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.broadcast_in_dim(T2, shape=[1, 4, 6, 16], broadcast_dims=[2, 3])
    T5 = fd.ops.broadcast_in_dim(T3, shape=[1, 4, 6, 16], broadcast_dims=[2, 3])
    T6 = fd.ops.cast(T4, dtype=DataType.Float)
    T7 = fd.ops.cast(T5, dtype=DataType.Float)
    T8 = fd.ops.cast(T0, dtype=DataType.Float)
    T9 = fd.ops.mul(T8, T6)
    T10 = fd.ops.mul(T8, T7)
    T11 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0], end_indices=[1, 4, 6, 8], strides=[1, 1, 1, 1])
    T12 = fd.ops.slice(T10, start_indices=[0, 0, 0, 8], end_indices=[1, 4, 6, 16], strides=[1, 1, 1, 1])
    T13 = fd.ops.neg(T11)
    S14 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T15 = fd.ops.pad(T12, [0, 8, 0, 0, 0, 0, 0, 0], S14)
    T16 = fd.ops.pad(T13, [8, 0, 0, 0, 0, 0, 0, 0], S14)
    T17 = fd.ops.add(T9, T15)
    T18 = fd.ops.add(T17, T16)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    T20 = fd.ops.permute(T19, dims=[0, 2, 1, 3])
    T21 = fd.ops.reshape(T20, new_shape=[1, 6, 64])
    T22 = fd.ops.cast(T1, dtype=DataType.Float)
    T23 = fd.ops.reshape(T22, new_shape=[1, 2, 2, 6, 16])
    T24 = fd.ops.sum(T23, dims=[2], keepdim=False, dtype=DataType.Null)
    T25 = fd.ops.broadcast_in_dim(T2, shape=[1, 2, 6, 16], broadcast_dims=[2, 3])
    T26 = fd.ops.broadcast_in_dim(T3, shape=[1, 2, 6, 16], broadcast_dims=[2, 3])
    T27 = fd.ops.cast(T25, dtype=DataType.Float)
    T28 = fd.ops.cast(T26, dtype=DataType.Float)
    T29 = fd.ops.mul(T24, T27)
    T30 = fd.ops.mul(T24, T28)
    T31 = fd.ops.slice(T30, start_indices=[0, 0, 0, 0], end_indices=[1, 2, 6, 8], strides=[1, 1, 1, 1])
    T32 = fd.ops.slice(T30, start_indices=[0, 0, 0, 8], end_indices=[1, 2, 6, 16], strides=[1, 1, 1, 1])
    T33 = fd.ops.neg(T31)
    T34 = fd.ops.pad(T32, [0, 8, 0, 0, 0, 0, 0, 0], S14)
    T35 = fd.ops.pad(T33, [8, 0, 0, 0, 0, 0, 0, 0], S14)
    T36 = fd.ops.add(T29, T34)
    T37 = fd.ops.add(T36, T35)
    T38 = fd.ops.cast(T37, dtype=DataType.BFloat16)
    T39 = fd.ops.permute(T38, dims=[0, 2, 1, 3])
    T40 = fd.ops.reshape(T39, new_shape=[1, 6, 32])
    fd.add_output(T21)
    fd.add_output(T40)


with FusionDefinition() as fd:
    nvfuser_fusion_id14(fd)

inputs = [
    torch.testing.make_tensor((1, 4, 6, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 4, 6, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((6, 16), dtype=torch.bfloat16, device='cuda:0', low=-1.0, high=1.0),
    torch.testing.make_tensor((6, 16), dtype=torch.bfloat16, device='cuda:0', low=-1.0, high=1.0),
]
fd.execute(inputs)
