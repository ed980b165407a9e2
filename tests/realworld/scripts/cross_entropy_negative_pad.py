# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_cross_entropy.py (fusion_func, the variant
# that gathers before reshaping): the label shift done by one pad with a negative left width
# ([-1, 1] drops the first label and appends -100), take_along_axis on the 3-D bf16 logits
# with a [1, S, 1] index built from fd.ops.at(shape, -1), cast and reshape after the gather,
# the Bool mask reshaped to [S] for the masked mean.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(-100, dtype=DataType.Int)
    S3 = fd.define_scalar(0, dtype=DataType.Int)
    S4 = fd.define_scalar(0.00000, dtype=DataType.Float)
    T5 = fd.ops.pad(T1, [-1, 1, 0, 0], S2)
    T6 = fd.ops.stride_order(T5, stride_order=[1, 0])
    T7 = fd.ops.ne(T6, S2)
    T8 = fd.ops.where(T7, T6, S3)
    V9 = fd.ops.shape(T8)
    S10 = fd.ops.at(V9, index=-1)
    T11 = fd.ops.broadcast_in_dim(T8, shape=[1, S10, 1], broadcast_dims=[0, 1])
    T12 = fd.ops.take_along_axis(T0, T11, dim=2)
    T13 = fd.ops.cast(T12, dtype=DataType.Float)
    T14 = fd.ops.reshape(T13, new_shape=[S10])
    T15 = fd.ops.cast(T0, dtype=DataType.Float)
    T16 = fd.ops.reshape(T15, new_shape=[40, 120])
    T17 = fd.ops.reshape(T6, new_shape=[40])
    T18 = fd.ops.max(T16, dims=[1], keepdim=False, dtype=DataType.Null)
    V19 = fd.ops.shape(T17)
    S20 = fd.ops.at(V19, index=-1)
    T21 = fd.ops.broadcast_in_dim(T18, shape=[S20, 1], broadcast_dims=[0])
    T22 = fd.ops.sub(T16, T21)
    T23 = fd.ops.exp(T22)
    T24 = fd.ops.sum(T23, dims=[1], keepdim=False, dtype=DataType.Null)
    T25 = fd.ops.log(T24)
    T26 = fd.ops.sub(T14, T18)
    T27 = fd.ops.sub(T26, T25)
    T28 = fd.ops.neg(T27)
    T29 = fd.ops.reshape(T7, new_shape=[S10])
    T30 = fd.ops.where(T29, T28, S4)
    T31 = fd.ops.sum(T29, dims=[0], keepdim=False, dtype=DataType.Null)
    T32 = fd.ops.cast(T31, dtype=DataType.Float)
    T33 = fd.ops.sum(T30, dims=[0], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.div(T33, T32)
    fd.add_output(T34)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((1, 40, 120), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 120, (1, 40), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
