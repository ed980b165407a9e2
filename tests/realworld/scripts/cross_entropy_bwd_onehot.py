# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of Thunder's cross_entropy (log_softmax + nll_loss, mean
# reduction, ignore_index=-100) as in NVIDIA/Fuser benchmarks/python/test_cross_entropy_loss.py,
# with the one-hot target built from iota == label as in test_cross_entropy.py's
# fusion_func_no_gather: grad_logits = (softmax(logits) - onehot) * grad_loss / n_valid,
# zeroed on ignored rows. The loss gradient is a 0-dim float tensor.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.max(T3, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[16, 1], broadcast_dims=[0])
    T6 = fd.ops.sub(T3, T5)
    T7 = fd.ops.exp(T6)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=True, dtype=DataType.Null)
    T9 = fd.ops.log(T8)
    T10 = fd.ops.sub(T6, T9)
    T11 = fd.ops.exp(T10)
    S12 = fd.ops.size(T0, dim=1)
    S13 = fd.define_scalar(0, dtype=DataType.Int)
    S14 = fd.define_scalar(1, dtype=DataType.Int)
    T15 = fd.ops.iota(S12, S13, S14, dtype=DataType.Int)
    T16 = fd.ops.broadcast_in_dim(T15, shape=[16, 100], broadcast_dims=[1])
    T17 = fd.ops.broadcast_in_dim(T1, shape=[16, 100], broadcast_dims=[0])
    T18 = fd.ops.eq(T16, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.Float)
    S20 = fd.define_scalar(-100, dtype=DataType.Int)
    T21 = fd.ops.ne(T1, S20)
    T22 = fd.ops.cast(T21, dtype=DataType.Float)
    T23 = fd.ops.sum(T22, dims=[0], keepdim=False, dtype=DataType.Null)
    T24 = fd.ops.div(T2, T23)
    T25 = fd.ops.broadcast_in_dim(T24, shape=[16, 100], broadcast_dims=[])
    T26 = fd.ops.sub(T11, T19)
    T27 = fd.ops.mul(T26, T25)
    T28 = fd.ops.broadcast_in_dim(T21, shape=[16, 100], broadcast_dims=[0])
    S29 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T30 = fd.ops.where(T28, T27, S29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    fd.add_output(T31)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.testing.make_tensor((16, 100), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 100, (16,), dtype=torch.int64, device='cuda:0'),
    torch.tensor(1.5, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
