# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder-generated layer_norm fusions printed in NVIDIA/Fuser issues:
# bf16 in, var_mean(axes=, correction=0), broadcast_in_dim(output_shape=), rsqrt, bf16 out.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(symbolic_sizes=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(symbolic_sizes=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4, T5 = fd.ops.var_mean(T3, axes=[2], correction=0, keepdim=False)
    T6 = fd.ops.broadcast_in_dim(T4, output_shape=[2, 8, 1], broadcast_dims=[0, 1])
    T7 = fd.ops.broadcast_in_dim(T5, output_shape=[2, 8, 1], broadcast_dims=[0, 1])
    S8 = fd.define_constant(1e-05)
    T9 = fd.ops.add(T6, S8)
    T10 = fd.ops.rsqrt(T9)
    T11 = fd.ops.broadcast_in_dim(T7, output_shape=[2, 8, 32], broadcast_dims=[0, 1, 2])
    T12 = fd.ops.sub(T3, T11)
    T13 = fd.ops.broadcast_in_dim(T10, output_shape=[2, 8, 32], broadcast_dims=[0, 1, 2])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.broadcast_in_dim(T1, output_shape=[2, 8, 32], broadcast_dims=[2])
    T16 = fd.ops.cast(T15, dtype=DataType.Float)
    T17 = fd.ops.mul(T14, T16)
    T18 = fd.ops.broadcast_in_dim(T2, output_shape=[2, 8, 32], broadcast_dims=[2])
    T19 = fd.ops.cast(T18, dtype=DataType.Float)
    T20 = fd.ops.add(T17, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    fd.add_output(T21)
    fd.add_output(T5)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((2, 8, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((32,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((32,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
