# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of HF GemmaRMSNorm (Gemma-2B, hidden 2048) as Thunder's
# autograd writes it, in the shape of NVIDIA/Fuser benchmarks/python/test_rmsnorm_bwd.py:
# bf16 input, grad_out and weight, the saved float rstd [N, 1]; the effective weight is
# 1 + w, grad_input = rstd * g * (1 + w) - x * rstd^3 / H * sum(g * (1 + w) * x), the weight
# gradient a sum over the rows of g * x * rstd; bf16 outputs.
# real-sizes: 24=8192 32=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id12(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    T6 = fd.ops.cast(T3, dtype=DataType.Float)
    S7 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T8 = fd.ops.add(S7, T6)
    V9 = T0.shape()
    T10 = fd.ops.broadcast_in_dim(T8, shape=V9, broadcast_dims=[1])
    T11 = fd.ops.broadcast_in_dim(T1, shape=V9, broadcast_dims=[0, 1])
    T12 = fd.ops.mul(T4, T11)
    T13 = fd.ops.mul(T5, T12)
    T14 = fd.ops.sum(T13, dims=[0], keepdim=False, dtype=DataType.Null)
    T15 = fd.ops.mul(T5, T10)
    T16 = fd.ops.mul(T15, T11)
    T17 = fd.ops.mul(T15, T4)
    T18 = fd.ops.sum(T17, dims=[1], keepdim=False, dtype=DataType.Null)
    V19 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)
    T20 = fd.ops.broadcast_in_dim(T18, shape=V19, broadcast_dims=[0])
    S21 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T22 = fd.ops.pow(T1, S21)
    T23 = fd.ops.mul(T20, T22)
    S24 = fd.ops.reciprocal(T0.size(1))
    T25 = fd.ops.mul(T23, S24)
    T26 = fd.ops.broadcast_in_dim(T25, shape=V9, broadcast_dims=[0, 1])
    T27 = fd.ops.mul(T26, T4)
    T28 = fd.ops.sub(T16, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    T30 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T29)
    fd.add_output(T30)


with FusionDefinition() as fd:
    nvfuser_fusion_id12(fd)

inputs = [
    torch.randn((24, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.randn((24, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0', low=-0.5, high=0.5),
]
fd.execute(inputs)
