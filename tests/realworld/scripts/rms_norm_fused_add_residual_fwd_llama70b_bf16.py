# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_rmsnorm_add_fwd.py (residual add + RMSNorm,
# the fused_add_rmsnorm pattern of a Llama decoder layer) at the Llama-2/3-70B width (8192):
# the residual sum is rounded to bf16 (HF adds in the model dtype) and that bf16 value is
# both returned (the next residual) and normalized; mean of squares via a sum and
# fd.ops.reciprocal(T0.size(1)), rsqrt, bf16 weight; inference (no statistics returned).
# real-sizes: 20=4096 64=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.add(T3, T4)
    T6 = fd.ops.cast(T5, dtype=DataType.BFloat16)
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.mul(T7, T7)
    T9 = fd.ops.sum(T8, dims=[1], keepdim=True, dtype=DataType.Null)
    S10 = fd.ops.reciprocal(T0.size(1))
    T11 = fd.ops.mul(T9, S10)
    S12 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    T14 = fd.ops.rsqrt(T13)
    V15 = T0.shape()
    T16 = fd.ops.broadcast_in_dim(T14, shape=V15, broadcast_dims=[0, 1])
    T17 = fd.ops.mul(T7, T16)
    T18 = fd.ops.cast(T2, dtype=DataType.Float)
    T19 = fd.ops.broadcast_in_dim(T18, shape=V15, broadcast_dims=[1])
    T20 = fd.ops.mul(T17, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((20, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((20, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((64,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
