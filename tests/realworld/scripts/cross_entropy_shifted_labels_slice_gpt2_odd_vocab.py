# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder trace of GPT2LMHeadModel's loss (HF: shift_logits =
# logits[..., :-1, :], shift_labels = labels[..., 1:], CrossEntropyLoss over the flattened
# tokens) with GPT-2's odd 50257-token vocabulary and a 1024-token context: both shifts are
# fd.ops.slice with literal bounds, the logits reshaped to [B * (T - 1), V] and the labels
# to [B * (T - 1)], fp32 upcast, log_softmax, take_along_axis on the masked labels, mean
# over the kept tokens.
# real-sizes: 9=1024 8=1023 157=50257
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id31(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 9, 157], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 9], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[2, 8, 157], strides=[1, 1, 1], manual_normalization=0)
    T3 = fd.ops.slice(T1, start_indices=[0, 1], end_indices=[2, 9], strides=[1, 1], manual_normalization=0)
    T4 = fd.ops.reshape(T2, new_shape=[16, 157])
    T5 = fd.ops.reshape(T3, new_shape=[16])
    T6 = fd.ops.cast(T4, dtype=DataType.Float)
    T7 = fd.ops.max(T6, dims=[1], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[16, 1], broadcast_dims=[0])
    T9 = fd.ops.broadcast_in_dim(T8, shape=[16, 157], broadcast_dims=[0, 1])
    T10 = fd.ops.sub(T6, T9)
    T11 = fd.ops.exp(T10)
    T12 = fd.ops.sum(T11, dims=[1], keepdim=False, dtype=DataType.Null)
    T13 = fd.ops.broadcast_in_dim(T12, shape=[16, 1], broadcast_dims=[0])
    T14 = fd.ops.log(T13)
    T15 = fd.ops.broadcast_in_dim(T14, shape=[16, 157], broadcast_dims=[0, 1])
    T16 = fd.ops.sub(T10, T15)
    S17 = fd.define_scalar(-100, dtype=DataType.Int)
    T18 = fd.ops.ne(T5, S17)
    S19 = fd.define_scalar(0, dtype=DataType.Int)
    T20 = fd.ops.where(T18, T5, S19)
    T21 = fd.ops.broadcast_in_dim(T20, shape=[16, 1], broadcast_dims=[0])
    T22 = fd.ops.take_along_axis(T16, T21, dim=1)
    T23 = fd.ops.reshape(T22, new_shape=[16])
    T24 = fd.ops.neg(T23)
    S25 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T26 = fd.ops.where(T18, T24, S25)
    T27 = fd.ops.sum(T26, dims=[0], keepdim=False, dtype=DataType.Null)
    T28 = fd.ops.sum(T18, dims=[0], keepdim=False, dtype=DataType.Null)
    T29 = fd.ops.cast(T28, dtype=DataType.Float)
    T30 = fd.ops.div(T27, T29)
    fd.add_output(T30)
    fd.add_output(T8)
    fd.add_output(T14)


with FusionDefinition() as fd:
    nvfuser_fusion_id31(fd)

inputs = [
    torch.randn((2, 9, 157), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 157, (2, 9), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
