# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of one routed expert's activation in a dropless MoE
# (silu(gate) * up scaled by the token's router weight, as in Megatron's grouped MLP with
# moe_apply_probs_on_input off; cf. NVIDIA/Fuser benchmarks/python/test_silu_mul_bwd.py) as
# Thunder differentiates it: gate and up sliced from the saved [T, 2I] projection, silu
# with reciprocal(1 + exp(-x)), the router-weight grad as a keepdim row sum of
# silu(gate) * up * grad in float, the activation grads scaled by the weight, silu's
# derivative as r * (1 + x * (1 - r)), and gate/up grads cat back to [T, 2I].
# real-sizes: 22=14336 13=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 44], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 22], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T12 = fd.ops.slice(T0, start_indices=[0, 0], end_indices=[13, 22], strides=[1, 1], manual_normalization=0)
    T13 = fd.ops.cast(T12, dtype=DataType.Float)
    T23 = fd.ops.slice(T0, start_indices=[0, 22], end_indices=[13, 44], strides=[1, 1], manual_normalization=0)
    T24 = fd.ops.cast(T23, dtype=DataType.Float)
    T25 = fd.ops.cast(T2, dtype=DataType.Float)
    T26 = fd.ops.neg(T13)
    T27 = fd.ops.exp(T26)
    S28 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T29 = fd.ops.add(S28, T27)
    T30 = fd.ops.reciprocal(T29)
    T31 = fd.ops.mul(T13, T30)
    T32 = fd.ops.mul(T31, T24)
    T36 = fd.ops.broadcast_in_dim(T1, shape=[13, 22], broadcast_dims=[0, 1])
    T37 = fd.ops.mul(T32, T25)
    T38 = fd.ops.sum(T37, dims=[1], keepdim=True, dtype=DataType.Null)
    T39 = fd.ops.mul(T25, T36)
    T40 = fd.ops.mul(T39, T31)
    T41 = fd.ops.mul(T39, T24)
    S42 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T43 = fd.ops.sub(S42, T30)
    T44 = fd.ops.mul(T13, T43)
    T45 = fd.ops.add(S42, T44)
    T46 = fd.ops.mul(T30, T45)
    T47 = fd.ops.mul(T41, T46)
    T48 = fd.ops.cat([T47, T40], dim=-1, manual_padding=0)
    T49 = fd.ops.cast(T48, dtype=DataType.BFloat16)
    fd.add_output(T49)
    fd.add_output(T38)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 44), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 1), dtype=torch.float32, device='cuda:0', low=0.0, high=1.0),
    torch.testing.make_tensor((13, 22), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
