# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on norm_bwd_fusion of NVIDIA/Fuser benchmarks/python/normalization.py (BatchNorm2d
# training backward from the saved mean and invstd [C]) on a ResNet-50 layer3 activation
# [256, 256, 14, 14] in fp16: the element count per channel as a product of fd.ops.size
# scalars and its reciprocal, sums over [0, 2, 3] of grad and grad * (x - mean), the
# projection term scaled by invstd^2; the running statistics are inputs the backward never
# reads. fp16 grad_input, grad_weight and grad_bias.
# real-sizes: 5=256 12=256 7=14
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T6 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T7 = fd.ops.cast(T0, dtype=DataType.Float)
    T8 = fd.ops.cast(T1, dtype=DataType.Float)
    T9 = fd.ops.cast(T2, dtype=DataType.Float)
    S10 = fd.define_scalar(1, dtype=DataType.Int)
    S11 = fd.ops.mul(S10, fd.ops.size(T7, dim=0))
    S12 = fd.ops.mul(S11, fd.ops.size(T7, dim=2))
    S13 = fd.ops.mul(S12, fd.ops.size(T7, dim=3))
    S14 = fd.ops.reciprocal(S13)
    T15 = fd.ops.broadcast(T5, [True, False, True, True])
    T16 = fd.ops.sum(T8, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    T17 = fd.ops.sub(T7, T15)
    T18 = fd.ops.mul(T8, T17)
    T19 = fd.ops.sum(T18, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.mul(T16, S14)
    T21 = fd.ops.broadcast(T20, [True, False, True, True])
    T22 = fd.ops.mul(T19, S14)
    T23 = fd.ops.mul(T6, T6)
    T24 = fd.ops.mul(T22, T23)
    T25 = fd.ops.broadcast(T24, [True, False, True, True])
    T26 = fd.ops.broadcast(T6, [True, False, True, True])
    T27 = fd.ops.broadcast(T9, [True, False, True, True])
    T28 = fd.ops.mul(T27, T26)
    T29 = fd.ops.mul(T25, T17)
    T30 = fd.ops.sub(T8, T29)
    T31 = fd.ops.sub(T30, T21)
    T32 = fd.ops.mul(T31, T28)
    T33 = fd.ops.mul(T19, T6)
    T34 = fd.ops.cast(T32, dtype=DataType.Half)
    T35 = fd.ops.cast(T33, dtype=DataType.Half)
    T36 = fd.ops.cast(T16, dtype=DataType.Half)
    fd.add_output(T34)
    fd.add_output(T35)
    fd.add_output(T36)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn((5, 12, 7, 7), dtype=torch.float16, device='cuda:0'),
    torch.randn((5, 12, 7, 7), dtype=torch.float16, device='cuda:0'),
    torch.randn((12,), dtype=torch.float16, device='cuda:0'),
    torch.zeros((12,), dtype=torch.float32, device='cuda:0'),
    torch.ones((12,), dtype=torch.float32, device='cuda:0'),
    torch.randn((12,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((12,), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
]
fd.execute(inputs)
