# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_scale_bias_relu_bwd.py (the backward of
# relu(x * scale + bias)) for a [B, C, L] activation with per-channel parameters: scale
# and bias broadcast to [1, C, 1] and fd.ops.expand-ed to [B, C, L] (the broadcast Thunder
# records for `bias[None, :, None]`), the relu mask recomputed with gt, and the parameter
# gradients as sums over dims [0, 2] (the backward of a broadcast) with keepdim=False.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5 = fd.ops.cast(T1, dtype=DataType.Float)
    T6 = fd.ops.broadcast_in_dim(T2, shape=[1, 24, 1], broadcast_dims=[1])
    T7 = fd.ops.expand(T6, shape=[6, 24, 40])
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.broadcast_in_dim(T3, shape=[1, 24, 1], broadcast_dims=[1])
    T10 = fd.ops.expand(T9, shape=[6, 24, 40])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T12 = fd.ops.mul(T5, T8)
    T13 = fd.ops.add(T12, T11)
    S14 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T15 = fd.ops.gt(T13, S14)
    T16 = fd.ops.where(T15, T4, S14)
    T17 = fd.ops.mul(T16, T8)
    T18 = fd.ops.mul(T16, T5)
    T19 = fd.ops.sum(T18, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.sum(T16, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T21 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    T22 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    T23 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T22)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.randn((6, 24, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((6, 24, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((24,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((24,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
