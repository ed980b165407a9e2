# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Llama4MoE.run_routed_experts in NVIDIA/Fuser tests/python/multidevice/test_moe.py
# (the routing around the grouped GEMMs, as thunderfx hands it to nvFuser): topk(1) of the
# router logits, sigmoid scores (reshaped from [T, 1] to [T]) scaling the tokens, a one-hot
# count matrix from scatter into zeros, tokens_per_expert as a column sum, a stable argsort
# of the expert ids, the tokens gathered in that order (index_select), offsets as cumsum of
# the counts padded by one in front (int32), block-scale offsets from counts rounded up to
# 128 (integer div), the last offset sliced off, and the inverse permutation as an argsort
# of the argsort.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    S2 = fd.define_scalar(1, dtype=DataType.Int)
    T3, T4 = fd.ops.topk(T1, S2, dim=1, largest=True, sorted=True)
    T5 = fd.ops.cast(T3, dtype=DataType.Float)
    T6 = fd.ops.sigmoid(T5)
    T7 = fd.ops.cast(T0, dtype=DataType.Float)
    T6b = fd.ops.reshape(T6, new_shape=[20])
    T8 = fd.ops.broadcast_in_dim(T6b, shape=[20, 48], broadcast_dims=[0])
    T9 = fd.ops.mul(T7, T8)
    T10 = fd.ops.cast(T9, dtype=DataType.BFloat16)
    S11 = fd.define_scalar(0, dtype=DataType.Int)
    T12 = fd.ops.full(shape=[20, 8], fill_value=S11, dtype=DataType.Int32)
    T13 = fd.ops.full(shape=[20, 1], fill_value=S2, dtype=DataType.Int32)
    T14 = fd.ops.scatter(T12, T4, T13, 1)
    T15 = fd.ops.sum(T14, dims=[0], keepdim=False, dtype=DataType.Int32)
    T16 = fd.ops.reshape(T4, new_shape=[20])
    T17 = fd.ops.argsort(T16, dim=0, descending=False, stable=True)
    T18 = fd.ops.index_select(T10, T17, dim=0)
    T19 = fd.ops.pad(T15, [1, 0], S11)
    T20 = fd.ops.cumsum(T19, dim=0)
    T21 = fd.ops.cast(T20, dtype=DataType.Int32)
    S22 = fd.define_scalar(127, dtype=DataType.Int)
    T23 = fd.ops.add(T19, S22)
    S24 = fd.define_scalar(128, dtype=DataType.Int)
    T25 = fd.ops.div(T23, S24)
    T26 = fd.ops.mul(T25, S24)
    T27 = fd.ops.cumsum(T26, dim=0)
    T28 = fd.ops.cast(T27, dtype=DataType.Int32)
    T29 = fd.ops.slice(T21, start_indices=[0], end_indices=[8], strides=[1])
    T30 = fd.ops.slice(T28, start_indices=[0], end_indices=[8], strides=[1])
    T31 = fd.ops.argsort(T17, dim=0, descending=False, stable=True)
    fd.add_output(T18)
    fd.add_output(T29)
    fd.add_output(T30)
    fd.add_output(T15)
    fd.add_output(T31)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((20, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((20, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
