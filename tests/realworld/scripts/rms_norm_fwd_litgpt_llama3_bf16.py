# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder forward trace of LitGPT's RMSNorm in Llama-3-8B (hidden 4096,
# eps 1e-5, x.float(), mean(x * x) as a sum divided by a Double scalar, rsqrt,
# x_normed * weight.float(), .to(bf16)): static shapes with a leading batch of 1,
# stride_order given on every input; the float rstd [1, S, 1] is returned for the backward.
# real-sizes: 24=8192 64=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 24, 64], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.mul(T2, T2)
    T4 = fd.ops.sum(T3, dims=[2], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[1, 24, 1], broadcast_dims=[0, 1])
    S6 = fd.define_scalar(64.0000, dtype=DataType.Double)
    T7 = fd.ops.div(T5, S6)
    S8 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T9 = fd.ops.add(T7, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[1, 24, 64], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.mul(T2, T11)
    T13 = fd.ops.broadcast_in_dim(T1, shape=[1, 24, 64], broadcast_dims=[2])
    T14 = fd.ops.cast(T13, dtype=DataType.Float)
    T15 = fd.ops.mul(T12, T14)
    T16 = fd.ops.cast(T15, dtype=DataType.BFloat16)
    fd.add_output(T16)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.testing.make_tensor((1, 24, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
