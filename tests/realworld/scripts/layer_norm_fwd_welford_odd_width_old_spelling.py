# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the 2023 repro printer of NVIDIA/Fuser issue #465 (symbolic_sizes=,
# broadcast_in_dim(output_shape=...) with literal sizes, Double scalars) for a float32
# LayerNorm forward at an odd width (2049 features, rows not a power of two): the
# statistics come from fd.ops.welford(T, axes=[1]) as (avg, var_sum, n) and the variance
# is var_sum / n; affine weight and bias, float output, mean and rstd out as [N, 1].
# real-sizes: 18=4096 67=2049
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id11(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(symbolic_sizes=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(symbolic_sizes=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3, T4, T5 = fd.ops.welford(T0, axes=[1])
    T6 = fd.ops.div(T4, T5)
    T7 = fd.ops.broadcast_in_dim(T3, output_shape=[18, 1], broadcast_dims=[0])
    T8 = fd.ops.broadcast_in_dim(T6, output_shape=[18, 1], broadcast_dims=[0])
    S9 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T10 = fd.ops.add(T8, S9)
    T11 = fd.ops.rsqrt(T10)
    T12 = fd.ops.broadcast_in_dim(T7, output_shape=[18, 67], broadcast_dims=[0, 1])
    T13 = fd.ops.sub(T0, T12)
    T14 = fd.ops.broadcast_in_dim(T11, output_shape=[18, 67], broadcast_dims=[0, 1])
    T15 = fd.ops.mul(T13, T14)
    T16 = fd.ops.broadcast_in_dim(T1, output_shape=[18, 67], broadcast_dims=[1])
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.broadcast_in_dim(T2, output_shape=[18, 67], broadcast_dims=[1])
    T19 = fd.ops.add(T17, T18)
    fd.add_output(T19)
    fd.add_output(T7)
    fd.add_output(T11)

with FusionDefinition() as fd:
    nvfuser_fusion_id11(fd)

inputs = [
    torch.randn((18, 67), dtype=torch.float32, device='cuda:0'),
    torch.randn((67,), dtype=torch.float32, device='cuda:0'),
    torch.randn((67,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
