# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder backward of BatchNorm2d on a channels-last bf16 activation
# (Lightning-AI/lightning-thunder PR #182, "batch_norm backward in one nvFuser kernel", and the
# channels_last case of NVIDIA/Fuser benchmarks/python/test_batchnorm_bwd.py): NCHW logical
# shapes with stride_order=[3, 0, 2, 1], saved float mean and invstd [C] broadcast with
# broadcast_in_dim(broadcast_dims=[1]), the per-channel count from the sizes, sums over
# [0, 2, 3]; bf16 grad_input (channels-last like its inputs), float grad_weight and grad_bias.
# real-sizes: 6=128 16=512 7=28
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 0, 2, 1])
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 0, 2, 1])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T2, dtype=DataType.Float)
    V8 = T0.shape()
    T9 = fd.ops.broadcast_in_dim(T3, shape=V8, broadcast_dims=[1])
    T10 = fd.ops.sub(T5, T9)
    T11 = fd.ops.broadcast_in_dim(T4, shape=V8, broadcast_dims=[1])
    T12 = fd.ops.mul(T10, T11)
    T13 = fd.ops.sum(T6, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.mul(T6, T12)
    T15 = fd.ops.sum(T14, dims=[0, 2, 3], keepdim=False, dtype=DataType.Null)
    S16 = fd.ops.mul(T0.size(0), T0.size(2))
    S17 = fd.ops.mul(S16, T0.size(3))
    S18 = fd.ops.reciprocal(S17)
    T19 = fd.ops.mul(T13, S18)
    T20 = fd.ops.mul(T15, S18)
    T21 = fd.ops.broadcast_in_dim(T19, shape=V8, broadcast_dims=[1])
    T22 = fd.ops.broadcast_in_dim(T20, shape=V8, broadcast_dims=[1])
    T23 = fd.ops.mul(T12, T22)
    T24 = fd.ops.sub(T6, T21)
    T25 = fd.ops.sub(T24, T23)
    T26 = fd.ops.mul(T7, T4)
    T27 = fd.ops.broadcast_in_dim(T26, shape=V8, broadcast_dims=[1])
    T28 = fd.ops.mul(T25, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    fd.add_output(T29, stride_order=[3, 0, 2, 1])
    fd.add_output(T15)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((6, 16, 7, 7), dtype=torch.bfloat16, device='cuda:0').to(memory_format=torch.channels_last),
    torch.randn((6, 16, 7, 7), dtype=torch.bfloat16, device='cuda:0').to(memory_format=torch.channels_last),
    torch.randn((16,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((16,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
]
fd.execute(inputs)
