# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder backward of F.cross_entropy(logits.float(), labels,
# label_smoothing=0.1) with Llama-3's 128256-token vocabulary after rematerialization: the
# log-sum-exp recomputed from the bf16 logits (max, exp, sum keepdim=True), the smoothed
# target (1 - 0.1) * onehot + 0.1 / V with the one-hot from iota == label (iota length
# from fd.ops.size), grad = (softmax - target) * grad_loss / count for the kept rows, the
# 0-dim loss gradient and count as 0-dim tensors; bf16 grad_logits for a 512-token chunk.
# real-sizes: 24=512 200=128256
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id15(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5 = fd.ops.max(T4, dims=[1], keepdim=True, dtype=DataType.Null)
    T6 = fd.ops.sub(T4, T5)
    T7 = fd.ops.exp(T6)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=True, dtype=DataType.Null)
    T9 = fd.ops.div(T7, T8)
    S10 = fd.ops.size(T0, dim=1)
    S11 = fd.define_scalar(0, dtype=DataType.Int)
    S12 = fd.define_scalar(1, dtype=DataType.Int)
    T13 = fd.ops.iota(S10, S11, S12, dtype=DataType.Int)
    V14 = fd.ops.shape(T0)
    T15 = fd.ops.broadcast_in_dim(T13, shape=V14, broadcast_dims=[1])
    T16 = fd.ops.broadcast_in_dim(T1, shape=V14, broadcast_dims=[0])
    T17 = fd.ops.eq(T15, T16)
    T18 = fd.ops.cast(T17, dtype=DataType.Float)
    S19 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T20 = fd.ops.mul(T18, S19)
    S21 = fd.define_scalar(0.100000, dtype=DataType.Double)
    S22 = fd.ops.div(S21, S10)
    T23 = fd.ops.add(T20, S22)
    T24 = fd.ops.sub(T9, T23)
    T25 = fd.ops.div(T2, T3)
    T26 = fd.ops.mul(T24, T25)
    S27 = fd.define_scalar(-100, dtype=DataType.Int)
    T28 = fd.ops.ne(T16, S27)
    S29 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T30 = fd.ops.where(T28, T26, S29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    fd.add_output(T31)


with FusionDefinition() as fd:
    nvfuser_fusion_id15(fd)

inputs = [
    torch.testing.make_tensor((24, 200), dtype=torch.bfloat16, device='cuda:0', low=-6, high=6),
    torch.randint(0, 200, (24,), dtype=torch.int64, device='cuda:0'),
    torch.tensor(1.0, dtype=torch.float32, device='cuda:0'),
    torch.tensor(24.0, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
