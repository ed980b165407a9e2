# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on norm_fwd_fusion of NVIDIA/Fuser benchmarks/python/normalization.py
# (BatchNorm2d training forward written out: var_mean over [0, 2, 3] with correction=0,
# fd.ops.broadcast with bool masks, momentum blend of the running statistics) on a
# ResNet-50 stem activation [256, 64, 56, 56] in bf16; the blended running mean and the
# running variance (updated with the unbiased batch variance, n / (n - 1)) are written back
# into their float inputs with add_output(..., alias_input=...).
# real-sizes: 5=256 8=64 7=56
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T2, dtype=DataType.Float)
    T8, T9 = fd.ops.var_mean(T5, dims=[0, 2, 3], correction=0, keepdim=False)
    S10 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T11 = fd.ops.add(T8, S10)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.broadcast(T12, [True, False, True, True])
    T14 = fd.ops.broadcast(T9, [True, False, True, True])
    T15 = fd.ops.sub(T5, T14)
    T16 = fd.ops.mul(T15, T13)
    T17 = fd.ops.broadcast(T6, [True, False, True, True])
    T18 = fd.ops.mul(T16, T17)
    T19 = fd.ops.broadcast(T7, [True, False, True, True])
    T20 = fd.ops.add(T18, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    S22 = fd.define_scalar(0.900000, dtype=DataType.Double)
    S23 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T24 = fd.ops.mul(S23, T9)
    T25 = fd.ops.mul(S22, T3)
    T26 = fd.ops.add(T24, T25)
    S27 = fd.ops.mul(fd.ops.size(T0, dim=0), fd.ops.size(T0, dim=2))
    S28 = fd.ops.mul(S27, fd.ops.size(T0, dim=3))
    S29 = fd.ops.cast(S28, dtype=DataType.Double)
    S30 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S31 = fd.ops.sub(S29, S30)
    S32 = fd.ops.div(S29, S31)
    T33 = fd.ops.mul(T8, S32)
    T34 = fd.ops.mul(S23, T33)
    T35 = fd.ops.mul(S22, T4)
    T36 = fd.ops.add(T34, T35)
    fd.add_output(T21)
    fd.add_output(T9)
    fd.add_output(T12)
    fd.add_output(T26, alias_input=T3)
    fd.add_output(T36, alias_input=T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((5, 8, 7, 7), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8,), dtype=torch.bfloat16, device='cuda:0'),
    torch.zeros((8,), dtype=torch.float32, device='cuda:0'),
    torch.ones((8,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
