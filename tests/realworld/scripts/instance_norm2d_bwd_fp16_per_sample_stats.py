# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on norm_bwd_fusion(norm="instance_norm") of NVIDIA/Fuser
# benchmarks/python/normalization.py (test_instancenorm_bwd.py) on a style-transfer sized
# fp16 activation [8, 128, 64, 64]: saved float mean and invstd [N, C], sums over the
# spatial axes [2, 3] only, the count as a product of two size scalars, and the channel
# weight's gradients summed over the batch afterwards (fd.ops.sum(..., 0)). fp16 outputs.
# real-sizes: 3=8 10=128 6=64 7=64
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T2, dtype=DataType.Float)
    S8 = fd.ops.mul(T5.size(2), T5.size(3))
    S9 = fd.ops.reciprocal(S8)
    T10 = fd.ops.broadcast(T3, [False, False, True, True])
    T11 = fd.ops.sum(T6, [2, 3], keepdim=False)
    T12 = fd.ops.sub(T5, T10)
    T13 = fd.ops.mul(T6, T12)
    T14 = fd.ops.sum(T13, [2, 3], keepdim=False)
    T15 = fd.ops.mul(T11, S9)
    T16 = fd.ops.broadcast(T15, [False, False, True, True])
    T17 = fd.ops.mul(T14, S9)
    T18 = fd.ops.mul(T4, T4)
    T19 = fd.ops.mul(T17, T18)
    T20 = fd.ops.broadcast(T19, [False, False, True, True])
    T21 = fd.ops.broadcast(T4, [False, False, True, True])
    T22 = fd.ops.broadcast(T7, [True, False, True, True])
    T23 = fd.ops.mul(T22, T21)
    T24 = fd.ops.mul(T20, T12)
    T25 = fd.ops.sub(T6, T24)
    T26 = fd.ops.sub(T25, T16)
    T27 = fd.ops.mul(T26, T23)
    T28 = fd.ops.mul(T14, T4)
    T29 = fd.ops.sum(T28, 0, keepdim=False)
    T30 = fd.ops.sum(T11, 0, keepdim=False)
    T31 = fd.ops.cast(T27, dtype=DataType.Half)
    T32 = fd.ops.cast(T29, dtype=DataType.Half)
    T33 = fd.ops.cast(T30, dtype=DataType.Half)
    fd.add_output(T31)
    fd.add_output(T32)
    fd.add_output(T33)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((3, 10, 6, 7), dtype=torch.float16, device='cuda:0'),
    torch.randn((3, 10, 6, 7), dtype=torch.float16, device='cuda:0'),
    torch.randn((10,), dtype=torch.float16, device='cuda:0'),
    torch.randn((3, 10), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((3, 10), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
]
fd.execute(inputs)
