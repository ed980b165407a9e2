# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the end of a ResNet bottleneck in inference as torch.jit/Thunder hand it to
# nvFuser (csarofeen/pytorch PR #1228: BatchNorm2d + residual add + relu on channels-last
# fp16 [256, 512, 28, 28]): eval-mode batch norm written out with the running statistics
# ((x - running_mean) * rsqrt(running_var + eps) * weight + bias), the identity branch
# added, relu, fp16 output in the inputs' channels-last layout.
# real-sizes: 6=256 16=512 7=28
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 0, 2, 1])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T5 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 0, 2, 1])
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    S7 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T8 = fd.ops.add(T2, S7)
    T9 = fd.ops.rsqrt(T8)
    T10 = fd.ops.cast(T3, dtype=DataType.Float)
    T11 = fd.ops.mul(T9, T10)
    T12 = fd.ops.cast(T4, dtype=DataType.Float)
    V13 = T0.shape()
    T14 = fd.ops.broadcast_in_dim(T1, shape=V13, broadcast_dims=[1])
    T15 = fd.ops.sub(T6, T14)
    T16 = fd.ops.broadcast_in_dim(T11, shape=V13, broadcast_dims=[1])
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.broadcast_in_dim(T12, shape=V13, broadcast_dims=[1])
    T19 = fd.ops.add(T17, T18)
    T20 = fd.ops.cast(T5, dtype=DataType.Float)
    T21 = fd.ops.add(T19, T20)
    T22 = fd.ops.relu(T21)
    T23 = fd.ops.cast(T22, dtype=DataType.Half)
    fd.add_output(T23, stride_order=[3, 0, 2, 1])


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.randn((6, 16, 7, 7), dtype=torch.float16, device='cuda:0').to(memory_format=torch.channels_last),
    torch.randn((16,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.float32, device='cuda:0', low=0.5, high=1.5),
    torch.randn((16,), dtype=torch.float16, device='cuda:0'),
    torch.randn((16,), dtype=torch.float16, device='cuda:0'),
    torch.randn((6, 16, 7, 7), dtype=torch.float16, device='cuda:0').to(memory_format=torch.channels_last),
]
fd.execute(inputs)
