# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_cross_entropy.py (fusion_func_old, the
# Thunder trace of HF's shifted-label cross entropy): the labels are padded with -100 and
# sliced one step left, logits reshaped to [tokens, vocab], ignore_index masking with
# ne/where, the target logit picked with take_along_axis, a logsumexp per row, and the mean
# over the non-ignored tokens (a sum of a Bool tensor cast to float).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    S3 = fd.define_scalar(-100, dtype=DataType.Int)
    T4 = fd.ops.pad(T1, [0, 1, 0, 0], S3)
    T5 = fd.ops.slice(T4, start_indices=[0, 1], end_indices=[1, 33], strides=[1, 1], manual_normalization=0)
    T6 = fd.ops.stride_order(T5, stride_order=[1, 0])
    T7 = fd.ops.reshape(T2, new_shape=[32, 96])
    T8 = fd.ops.reshape(T6, new_shape=[32])
    S9 = fd.define_scalar(-100, dtype=DataType.Int)
    S10 = fd.define_scalar(0, dtype=DataType.Int)
    T11 = fd.ops.ne(T8, S9)
    T12 = fd.ops.where(T11, T8, S10)
    V13 = fd.ops.shape(T8)
    S14 = fd.ops.at(V13, index=-1)
    T15 = fd.ops.broadcast_in_dim(T12, shape=[S14, 1], broadcast_dims=[0])
    T16 = fd.ops.take_along_axis(T7, T15, dim=1)
    T17 = fd.ops.reshape(T16, new_shape=[S14])
    T18 = fd.ops.max(T7, dims=[1], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.broadcast_in_dim(T18, shape=[S14, 1], broadcast_dims=[0])
    T20 = fd.ops.sub(T7, T19)
    T21 = fd.ops.exp(T20)
    T22 = fd.ops.sum(T21, dims=[1], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.log(T22)
    T24 = fd.ops.sub(T17, T18)
    T25 = fd.ops.sub(T24, T23)
    T26 = fd.ops.neg(T25)
    S27 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T28 = fd.ops.where(T11, T26, S27)
    T29 = fd.ops.sum(T11, dims=[0], keepdim=False, dtype=DataType.Null)
    T30 = fd.ops.cast(T29, dtype=DataType.Float)
    T31 = fd.ops.sum(T28, dims=[0], keepdim=False, dtype=DataType.Null)
    T32 = fd.ops.div(T31, T30)
    fd.add_output(T32)
    fd.add_output(T28)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((1, 32, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 96, (1, 32), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
