# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3291 (segfault in the Thunder CI container, 2024): the
# backward of a rotary embedding on q and k whose gradients arrive as [1, H, T, D] views
# of a [1, T, H, D] buffer with a padded T stride (stride_order [3, 1, 2, 0]; contiguity in
# that allocation order, [None, False, True, True]: T's stride is padded); cos/sin [T, 2*D] float; the grads of the rotated half are
# sliced, negated and padded back (the transpose of slice+cat), summed over batch and
# heads for the cos/sin grads.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4, 2, 8], contiguity=[None, False, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 1, 2, 0])
    T1 = fd.define_tensor(shape=[1, 4, 2, 8], contiguity=[None, False, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 1, 2, 0])
    T2 = fd.define_tensor(shape=[2, 8], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[2, 8], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[1, 4, 2, 8], contiguity=[None, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 2, 1, 0])
    T5 = fd.ops.broadcast_in_dim(T2, shape=[1, 4, 2, 8], broadcast_dims=[2, 3])
    T6 = fd.ops.broadcast_in_dim(T3, shape=[1, 4, 2, 8], broadcast_dims=[2, 3])
    T7 = fd.ops.mul(T6, T0)
    T8 = fd.ops.mul(T5, T0)
    T9 = fd.ops.slice(T7, start_indices=[0, 0, 0, 0], end_indices=[1, 4, 2, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T10 = fd.ops.slice(T7, start_indices=[0, 0, 0, 4], end_indices=[1, 4, 2, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T11 = fd.ops.neg(T10)
    S12 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T13 = fd.ops.pad(T9, [4, 0, 0, 0, 0, 0, 0, 0], S12)
    T14 = fd.ops.pad(T11, [0, 4, 0, 0, 0, 0, 0, 0], S12)
    T15 = fd.ops.add(T13, T14)
    T16 = fd.ops.add(T8, T15)
    T17 = fd.ops.mul(T6, T1)
    T18 = fd.ops.mul(T5, T1)
    T19 = fd.ops.slice(T17, start_indices=[0, 0, 0, 0], end_indices=[1, 4, 2, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T20 = fd.ops.slice(T17, start_indices=[0, 0, 0, 4], end_indices=[1, 4, 2, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T21 = fd.ops.neg(T20)
    T22 = fd.ops.pad(T19, [4, 0, 0, 0, 0, 0, 0, 0], S12)
    T23 = fd.ops.pad(T21, [0, 4, 0, 0, 0, 0, 0, 0], S12)
    T24 = fd.ops.add(T22, T23)
    T25 = fd.ops.add(T18, T24)
    T26 = fd.ops.slice(T4, start_indices=[0, 0, 0, 0], end_indices=[1, 4, 2, 4], strides=[1, 1, 1, 1], manual_normalization=0)
    T27 = fd.ops.slice(T4, start_indices=[0, 0, 0, 4], end_indices=[1, 4, 2, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T28 = fd.ops.neg(T27)
    T29 = fd.ops.cat([T28, T26], dim=-1, manual_padding=0)
    T30 = fd.ops.mul(T0, T4)
    T31 = fd.ops.sum(T30, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T32 = fd.ops.mul(T0, T29)
    T33 = fd.ops.sum(T32, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.permute(T16, dims=[0, 2, 1, 3])
    T35 = fd.ops.permute(T25, dims=[0, 2, 1, 3])
    T36 = fd.ops.cat([T34, T35], dim=-1, manual_padding=0)
    T37 = fd.ops.reshape(T36, new_shape=[1, 2, 64])
    fd.add_output(T31)
    fd.add_output(T33)
    fd.add_output(T37)

with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((80,), dtype=torch.float32, device='cuda:0').as_strided((1, 4, 2, 8), (80, 8, 40, 1)),
    torch.randn((80,), dtype=torch.float32, device='cuda:0').as_strided((1, 4, 2, 8), (80, 8, 40, 1)),
    torch.testing.make_tensor((2, 8), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 8), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1, 4, 2, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
