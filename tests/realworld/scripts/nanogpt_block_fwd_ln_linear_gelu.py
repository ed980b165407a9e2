# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issues #2317 and #2199 (Thunder's test_nanogpt_block_fwd,
# 2024, once linear was taken into fusions): a bf16 residual stream, layer norm in float
# via var_mean(correction=0) with weight and bias, the MLP's fc linear with bias, the
# tanh GELU written out by Thunder (pow 3, 0.044715, sqrt(2/pi), tanh), the projection
# linear, and the residual add; outputs saved for backward too (mean, rstd).
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T6 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8, T9 = fd.ops.var_mean(T7, dims=[2], correction=0, keepdim=False)
    S10 = fd.define_scalar(2, dtype=DataType.Int)
    S11 = fd.define_scalar(8, dtype=DataType.Int)
    S12 = fd.define_scalar(1, dtype=DataType.Int)
    V13 = fd.define_vector([S10, S11, S12], dtype=DataType.Int)
    T14 = fd.ops.broadcast_in_dim(T8, shape=V13, broadcast_dims=[0, 1])
    T15 = fd.ops.broadcast_in_dim(T9, shape=V13, broadcast_dims=[0, 1])
    S16 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T17 = fd.ops.add(T14, S16)
    T18 = fd.ops.rsqrt(T17)
    V19 = fd.ops.shape(T7)
    T20 = fd.ops.broadcast_in_dim(T15, shape=V19, broadcast_dims=[0, 1, 2])
    T21 = fd.ops.sub(T7, T20)
    T22 = fd.ops.broadcast_in_dim(T18, shape=V19, broadcast_dims=[0, 1, 2])
    T23 = fd.ops.mul(T21, T22)
    T24 = fd.ops.broadcast_in_dim(T5, shape=V19, broadcast_dims=[2])
    T25 = fd.ops.cast(T24, dtype=DataType.Float)
    T26 = fd.ops.mul(T23, T25)
    T27 = fd.ops.broadcast_in_dim(T4, shape=V19, broadcast_dims=[2])
    T28 = fd.ops.cast(T27, dtype=DataType.Float)
    T29 = fd.ops.add(T26, T28)
    T30 = fd.ops.cast(T29, dtype=DataType.BFloat16)
    T31 = fd.ops.linear(T30, T3, T2)
    T32 = fd.ops.cast(T31, dtype=DataType.Float)
    S33 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T34 = fd.ops.mul(S33, T32)
    S35 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T36 = fd.ops.pow(T32, S35)
    S37 = fd.define_scalar(0.0447150, dtype=DataType.Double)
    T38 = fd.ops.mul(S37, T36)
    T39 = fd.ops.add(T32, T38)
    S40 = fd.define_scalar(0.797885, dtype=DataType.Double)
    T41 = fd.ops.mul(S40, T39)
    T42 = fd.ops.tanh(T41)
    S43 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T44 = fd.ops.add(S43, T42)
    T45 = fd.ops.mul(T34, T44)
    T46 = fd.ops.cast(T45, dtype=DataType.BFloat16)
    T47 = fd.ops.linear(T46, T1, T0)
    T48 = fd.ops.cast(T47, dtype=DataType.Float)
    T49 = fd.ops.add(T7, T48)
    T50 = fd.ops.cast(T49, dtype=DataType.BFloat16)
    fd.add_output(T50)
    fd.add_output(T9)
    fd.add_output(T18)
    fd.add_output(T31)

with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((32, 128), dtype=torch.bfloat16, device='cuda:0', low=-0.2, high=0.2),
    torch.testing.make_tensor((128,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((128, 32), dtype=torch.bfloat16, device='cuda:0', low=-0.3, high=0.3),
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 8, 32), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
