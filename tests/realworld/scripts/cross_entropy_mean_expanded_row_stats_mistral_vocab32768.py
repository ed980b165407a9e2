# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the cross entropy Thunder hands nvFuser for Mistral-7B's causal-LM loss
# (vocabulary 32768, bf16 logits upcast to float): the row max and the log-sum-exp come back
# from broadcast_in_dim straight to the [tokens, vocab] shape (expanded, as Thunder's
# decomposition writes them, not [tokens, 1]), take_along_axis picks each label's
# log-probability, ignore_index -100 is masked with where, and the mean divides by the count
# of valid tokens.
# real-sizes: 12=4096 97=32768
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[12, 97], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[12], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T2, dims=[1], keepdim=False, dtype=DataType.Null)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[12, 97], broadcast_dims=[0])
    T5 = fd.ops.sub(T2, T4)
    T6 = fd.ops.exp(T5)
    T7 = fd.ops.sum(T6, dims=[1], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.log(T7)
    T9 = fd.ops.broadcast_in_dim(T8, shape=[12, 97], broadcast_dims=[0])
    T10 = fd.ops.sub(T5, T9)
    S11 = fd.define_scalar(-100, dtype=DataType.Int)
    T12 = fd.ops.ne(T1, S11)
    S13 = fd.define_scalar(0, dtype=DataType.Int)
    T14 = fd.ops.where(T12, T1, S13)
    T15 = fd.ops.broadcast_in_dim(T14, shape=[12, 1], broadcast_dims=[0])
    T16 = fd.ops.take_along_axis(T10, T15, dim=1)
    T17 = fd.ops.squeeze(T16, dims=[1])
    T18 = fd.ops.neg(T17)
    S19 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T20 = fd.ops.where(T12, T18, S19)
    T21 = fd.ops.sum(T20, dims=[0], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.cast(T12, dtype=DataType.Float)
    T23 = fd.ops.sum(T22, dims=[0], keepdim=False, dtype=DataType.Null)
    T24 = fd.ops.div(T21, T23)
    fd.add_output(T24)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((12, 97), dtype=torch.bfloat16, device='cuda:0', low=-8, high=8),
    torch.randint(0, 97, (12,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
