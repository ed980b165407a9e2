# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on norm_fwd_fusion(norm="instance_norm") of NVIDIA/Fuser
# benchmarks/python/normalization.py and the InstanceNorm3dNVFuser contrib (NVIDIA/Fuser PR
# #434) for a 3-D UNet activation [N, 32, 128, 128, 128] in float32: var_mean over the three
# spatial axes per (sample, channel), broadcast masks keeping [N, C], and running statistics
# updated from the per-sample statistics summed over the batch times reciprocal(N) and
# written back into the inputs (alias_input). Output, mean and invstd [N, C] returned.
# real-sizes: 4=32 5=128 6=128 7=128
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1, -1], contiguity=[True, True, True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T5, T6 = fd.ops.var_mean(T0, dims=[2, 3, 4], correction=0, keepdim=False)
    S7 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T8 = fd.ops.add(T5, S7)
    T9 = fd.ops.rsqrt(T8)
    T10 = fd.ops.broadcast(T9, [False, False, True, True, True])
    T11 = fd.ops.broadcast(T6, [False, False, True, True, True])
    T12 = fd.ops.sub(T0, T11)
    T13 = fd.ops.mul(T12, T10)
    T14 = fd.ops.broadcast(T1, [True, False, True, True, True])
    T15 = fd.ops.mul(T13, T14)
    T16 = fd.ops.broadcast(T2, [True, False, True, True, True])
    T17 = fd.ops.add(T15, T16)
    S18 = fd.define_scalar(0.990000, dtype=DataType.Double)
    S19 = fd.define_scalar(0.0100000, dtype=DataType.Double)
    T20 = fd.ops.mul(S19, T6)
    T21 = fd.ops.broadcast(T3, [True, False])
    T22 = fd.ops.mul(S18, T21)
    T23 = fd.ops.add(T20, T22)
    T24 = fd.ops.mul(S19, T5)
    T25 = fd.ops.broadcast(T4, [True, False])
    T26 = fd.ops.mul(S18, T25)
    T27 = fd.ops.add(T24, T26)
    S28 = fd.ops.reciprocal(T0.size(0))
    T29 = fd.ops.sum(T23, dims=[0], keepdim=False, dtype=DataType.Null)
    T30 = fd.ops.mul(T29, S28)
    T31 = fd.ops.sum(T27, dims=[0], keepdim=False, dtype=DataType.Null)
    T32 = fd.ops.mul(T31, S28)
    fd.add_output(T17)
    fd.add_output(T6)
    fd.add_output(T9)
    fd.add_output(T30, alias_input=T3)
    fd.add_output(T32, alias_input=T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((2, 4, 5, 6, 7), dtype=torch.float32, device='cuda:0'),
    torch.randn((4,), dtype=torch.float32, device='cuda:0'),
    torch.randn((4,), dtype=torch.float32, device='cuda:0'),
    torch.zeros((4,), dtype=torch.float32, device='cuda:0'),
    torch.ones((4,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
