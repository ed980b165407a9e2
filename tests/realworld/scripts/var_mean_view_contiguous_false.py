# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on csarofeen/pytorch issue #2116 (codegen error on a Swin-style layer norm,
# late 2022): inputs declared with contiguous=[False, ...] lists (strided views of
# larger buffers), two set() copies of one input, var_mean(axes=, correction=0) on one
# copy and on a view of the other, broadcast_in_dim(output_shape=), define_constant
# epsilon, rsqrt, and the normalised result scaled by an affine weight and bias.
# Real sizes: 32768 rows of 1024 channels, seen as [4096, 8] and as [2048, 16] rows.
# real-sizes: 12=4096 4=8 6=2048 8=16 24=1024
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1, -1], contiguous=[False, False, False], dtype=DataType.Float)
    T1 = fd.define_tensor(symbolic_sizes=[-1], contiguous=[True], dtype=DataType.Float)
    T2 = fd.define_tensor(symbolic_sizes=[-1], contiguous=[True], dtype=DataType.Float)
    T3 = fd.ops.set(T0)
    T4 = fd.ops.set(T0)
    T5, T6 = fd.ops.var_mean(T3, axes=[2], correction=0, keepdim=False)
    T7 = fd.ops.view(T4, original_shape=[12, 4, 24], new_shape=[6, 8, 24])
    T8, T9 = fd.ops.var_mean(T7, axes=[2], correction=0, keepdim=False)
    T10 = fd.ops.broadcast_in_dim(T5, output_shape=[12, 4, 1], broadcast_dims=[0, 1])
    T11 = fd.ops.broadcast_in_dim(T6, output_shape=[12, 4, 1], broadcast_dims=[0, 1])
    S12 = fd.define_constant(1.00000e-05)
    T13 = fd.ops.add(T10, S12)
    T14 = fd.ops.rsqrt(T13)
    T15 = fd.ops.broadcast_in_dim(T11, output_shape=[12, 4, 24], broadcast_dims=[0, 1, 2])
    T16 = fd.ops.sub(T3, T15)
    T17 = fd.ops.broadcast_in_dim(T14, output_shape=[12, 4, 24], broadcast_dims=[0, 1, 2])
    T18 = fd.ops.mul(T16, T17)
    T19 = fd.ops.broadcast_in_dim(T1, output_shape=[12, 4, 24], broadcast_dims=[2])
    T20 = fd.ops.mul(T18, T19)
    T21 = fd.ops.broadcast_in_dim(T2, output_shape=[12, 4, 24], broadcast_dims=[2])
    T22 = fd.ops.add(T20, T21)
    T23 = fd.ops.broadcast_in_dim(T8, output_shape=[6, 8, 1], broadcast_dims=[0, 1])
    T24 = fd.ops.broadcast_in_dim(T9, output_shape=[6, 8, 1], broadcast_dims=[0, 1])
    T25 = fd.ops.add(T23, S12)
    T26 = fd.ops.rsqrt(T25)
    T27 = fd.ops.sub(T7, T24)
    T28 = fd.ops.mul(T27, T26)
    fd.add_output(T22)
    fd.add_output(T28)
    fd.add_output(T14)

with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn((2400,), dtype=torch.float32, device='cuda:0').as_strided((12, 4, 24), (200, 50, 2)),
    torch.randn((24,), dtype=torch.float32, device='cuda:0'),
    torch.randn((24,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
