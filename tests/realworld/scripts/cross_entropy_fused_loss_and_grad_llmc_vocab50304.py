# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the fused classifier of llm.c / Liger-style fused cross entropy as a single
# fusion (the loss and the logits gradient from one read of the logits, as Thunder's
# fused linear-cross-entropy chunks hand it to nvFuser) for GPT-2 with llm.c's padded
# 50304-entry vocabulary (B*T = 8 * 1024 tokens): per-token loss lse - x[label] via
# take_along_axis, and grad = (softmax - onehot(label)) * (1 / (B*T)) with the one-hot from
# iota; float per-token losses and bf16 grad_logits out.
# real-sizes: 16=8192 144=50304
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16, 144], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[16], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[16, 144], broadcast_dims=[0])
    T5 = fd.ops.sub(T2, T4)
    T6 = fd.ops.exp(T5)
    T7 = fd.ops.sum(T6, dims=[1], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.log(T7)
    T9 = fd.ops.add(T8, T3)
    T10 = fd.ops.broadcast_in_dim(T1, shape=[16, 1], broadcast_dims=[0])
    T11 = fd.ops.take_along_axis(T2, T10, dim=1)
    T12 = fd.ops.reshape(T11, new_shape=[16])
    T13 = fd.ops.sub(T9, T12)
    T14 = fd.ops.broadcast_in_dim(T7, shape=[16, 144], broadcast_dims=[0])
    T15 = fd.ops.div(T6, T14)
    S16 = fd.define_scalar(144, dtype=DataType.Int)
    S17 = fd.define_scalar(0, dtype=DataType.Int)
    S18 = fd.define_scalar(1, dtype=DataType.Int)
    T19 = fd.ops.iota(S16, S17, S18, dtype=DataType.Int)
    T20 = fd.ops.broadcast_in_dim(T19, shape=[16, 144], broadcast_dims=[1])
    T21 = fd.ops.broadcast_in_dim(T1, shape=[16, 144], broadcast_dims=[0])
    T22 = fd.ops.eq(T20, T21)
    T23 = fd.ops.cast(T22, dtype=DataType.Float)
    T24 = fd.ops.sub(T15, T23)
    S25 = fd.define_scalar(0.0625000, dtype=DataType.Double)
    T26 = fd.ops.mul(T24, S25)
    T27 = fd.ops.cast(T26, dtype=DataType.BFloat16)
    fd.add_output(T13)
    fd.add_output(T27)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((16, 144), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 144, (16,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
