# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_split_silu_bwd.py (split_silu_bwd_fusion,
# the backward of silu(x1) * x2 after torch.split of a fused [T, 2I] gate/up projection, as
# in Mixtral / Llama experts) with static sizes as a Thunder trace prints them: the gate and
# up halves sliced from the saved projection, promoted to float, the sigmoid written as
# reciprocal(1 + exp(-x)) and its derivative through two multiplies by it, and the gate and
# up gradients cat back along the last axis (the backward of the split), bf16 out.
# real-sizes: 22=14336 13=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 44], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13, 22], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T11 = fd.ops.slice(T0, start_indices=[0, 0], end_indices=[13, 22], strides=[1, 1], manual_normalization=0)
    T12 = fd.ops.cast(T1, dtype=DataType.Float)
    T22 = fd.ops.slice(T0, start_indices=[0, 22], end_indices=[13, 44], strides=[1, 1], manual_normalization=0)
    T23 = fd.ops.cast(T11, dtype=DataType.Float)
    T24 = fd.ops.cast(T22, dtype=DataType.Float)
    T25 = fd.ops.neg(T23)
    T26 = fd.ops.exp(T25)
    T27 = fd.ops.mul(T24, T12)
    S28 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T29 = fd.ops.add(S28, T26)
    T30 = fd.ops.mul(T23, T27)
    T31 = fd.ops.reciprocal(T29)
    T32 = fd.ops.neg(T30)
    T33 = fd.ops.mul(T32, T31)
    T34 = fd.ops.mul(T33, T31)
    T35 = fd.ops.mul(T34, T26)
    T36 = fd.ops.mul(T23, T31)
    T37 = fd.ops.neg(T35)
    T38 = fd.ops.mul(T31, T27)
    T39 = fd.ops.mul(T36, T12)
    T40 = fd.ops.add(T38, T37)
    T41 = fd.ops.cat([T40, T39], dim=-1, manual_padding=0)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    fd.add_output(T42)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 44), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 22), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
