# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_dropout_layernorm_fwd.py
# (dropout_layernorm_fwd_fusion: layernorm(input2 + dropout(input1))) with the keep-mask
# given as a Bool input instead of drawn in the fusion, at a Phi-2 / GPT-NeoX-2.7B width
# (2560): bf16 inputs, the mask cast to float times 1/(1-p), var_mean(correction=0),
# affine weight and bias; outputs the bf16 result, the float residual sum (saved for the
# backward), mean [N] and invstd [N, 1].
# real-sizes: 24=4096 80=2560
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id6(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T2, dtype=DataType.Float)
    T8 = fd.ops.cast(T3, dtype=DataType.Float)
    T9 = fd.ops.cast(T4, dtype=DataType.Float)
    T10 = fd.ops.mul(T5, T7)
    S11 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T12 = fd.ops.mul(T10, S11)
    T13 = fd.ops.add(T6, T12)
    T14, T15 = fd.ops.var_mean(T13, dims=[1], correction=0, keepdim=False)
    V16 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)
    T17 = fd.ops.broadcast_in_dim(T14, shape=V16, broadcast_dims=[0])
    T18 = fd.ops.broadcast_in_dim(T15, shape=V16, broadcast_dims=[0])
    S19 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T20 = fd.ops.add(T17, S19)
    T21 = fd.ops.rsqrt(T20)
    V22 = T0.shape()
    T23 = fd.ops.broadcast_in_dim(T18, shape=V22, broadcast_dims=[0, 1])
    T24 = fd.ops.sub(T13, T23)
    T25 = fd.ops.broadcast_in_dim(T21, shape=V22, broadcast_dims=[0, 1])
    T26 = fd.ops.mul(T24, T25)
    T27 = fd.ops.broadcast_in_dim(T8, shape=V22, broadcast_dims=[1])
    T28 = fd.ops.mul(T26, T27)
    T29 = fd.ops.broadcast_in_dim(T9, shape=V22, broadcast_dims=[1])
    T30 = fd.ops.add(T28, T29)
    T31 = fd.ops.cast(T30, dtype=DataType.BFloat16)
    fd.add_output(T31)
    fd.add_output(T13)
    fd.add_output(T15)
    fd.add_output(T21)


with FusionDefinition() as fd:
    nvfuser_fusion_id6(fd)

inputs = [
    torch.randn((24, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((24, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.rand((24, 80), device='cuda:0') < 0.9,
    torch.randn((80,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((80,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
