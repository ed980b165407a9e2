# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser PR #4637 (fused Embedding + RMSNorm inference benchmark; PR #4690
# vectorizes index_select inside normalization fusions): a decode step of a Llama-3-8B
# style model (vocab 128256, hidden 4096) where the ids of a batch of sequences are looked
# up with index_select and the first decoder layer's RMSNorm (pow 2, mean, rsqrt, bf16
# weight) runs on the gathered rows in the same fusion; the bf16 embeddings (the residual)
# and the normalized rows are outputs.
# real-sizes: 120=128256 64=4096 6=64
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[6, 1], contiguity=[True, None], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[120, 64], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.ops.reshape(T0, new_shape=[6])
    T4 = fd.ops.index_select(T1, T3, dim=0)
    T5 = fd.ops.reshape(T4, new_shape=[6, 1, 64])
    T6 = fd.ops.cast(T5, dtype=DataType.Float)
    S7 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T8 = fd.ops.pow(T6, S7)
    T9 = fd.ops.sum(T8, dims=[2], keepdim=False, dtype=DataType.Null)
    T10 = fd.ops.broadcast_in_dim(T9, shape=[6, 1, 1], broadcast_dims=[0, 1])
    S11 = fd.define_scalar(64.0000, dtype=DataType.Double)
    T12 = fd.ops.div(T10, S11)
    S13 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T14 = fd.ops.add(T12, S13)
    T15 = fd.ops.rsqrt(T14)
    T16 = fd.ops.broadcast_in_dim(T15, shape=[6, 1, 64], broadcast_dims=[0, 1, 2])
    T17 = fd.ops.mul(T6, T16)
    T18 = fd.ops.cast(T17, dtype=DataType.BFloat16)
    T19 = fd.ops.broadcast_in_dim(T2, shape=[6, 1, 64], broadcast_dims=[2])
    T20 = fd.ops.cast(T19, dtype=DataType.Float)
    T21 = fd.ops.cast(T18, dtype=DataType.Float)
    T22 = fd.ops.mul(T20, T21)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    fd.add_output(T5)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 120, (6, 1), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((120, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
