# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_layer_norm_bwd_fp16_fp32_outputs.py (the
# fp16 LayerNorm backward that also hands out an fp32 intermediate) at a GPT-3 175B width
# (12288): fp16 input, grad_out and weight upcast, saved float mean [N] and invstd [N, 1],
# `T0.size(0)` in a define_vector and `T0.shape()` as broadcast shapes, the 1/H factor as
# fd.ops.reciprocal(T0.size(1)); fp16 grad_input, grad_weight and grad_bias, plus the
# fp32 [N, H] correction term as a fourth output.
# real-sizes: 28=2048 96=12288
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T4, dtype=DataType.Float)
    V8 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)
    T9 = fd.ops.broadcast_in_dim(T2, shape=V8, broadcast_dims=[0])
    V10 = T0.shape()
    T11 = fd.ops.broadcast_in_dim(T9, shape=V10, broadcast_dims=[0, 1])
    T12 = fd.ops.sub(T5, T11)
    T13 = fd.ops.broadcast_in_dim(T3, shape=V10, broadcast_dims=[0, 1])
    T14 = fd.ops.mul(T12, T13)
    T15 = fd.ops.broadcast_in_dim(T7, shape=V10, broadcast_dims=[1])
    T16 = fd.ops.sum(T6, dims=[0], keepdim=False, dtype=DataType.Null)
    T17 = fd.ops.mul(T6, T15)
    T18 = fd.ops.mul(T6, T14)
    T19 = fd.ops.sum(T18, dims=[0], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.mul(T17, T13)
    T21 = fd.ops.mul(T17, T12)
    T22 = fd.ops.sum(T21, dims=[1], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.broadcast_in_dim(T22, shape=V8, broadcast_dims=[0])
    T24 = fd.ops.neg(T20)
    T25 = fd.ops.sum(T24, dims=[1], keepdim=False, dtype=DataType.Null)
    T26 = fd.ops.broadcast_in_dim(T25, shape=V8, broadcast_dims=[0])
    S27 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T28 = fd.ops.mul(S27, T23)
    S29 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T30 = fd.ops.pow(T3, S29)
    T31 = fd.ops.mul(T28, T30)
    T32 = fd.ops.sum(T26, dims=[1], keepdim=False, dtype=DataType.Null)
    T33 = fd.ops.sum(T31, dims=[1], keepdim=False, dtype=DataType.Null)
    T34 = fd.ops.broadcast_in_dim(T33, shape=V8, broadcast_dims=[0])
    T35 = fd.ops.broadcast_in_dim(T34, shape=V10, broadcast_dims=[0, 1])
    S36 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T37 = fd.ops.mul(S36, T35)
    T38 = fd.ops.mul(T37, T12)
    S39 = fd.ops.reciprocal(T0.size(1))
    T40 = fd.ops.mul(T38, S39)
    T41 = fd.ops.broadcast_in_dim(T32, shape=V8, broadcast_dims=[0])
    T42 = fd.ops.broadcast_in_dim(T41, shape=V10, broadcast_dims=[0, 1])
    T43 = fd.ops.mul(S39, T42)
    T44 = fd.ops.add(T40, T43)
    T45 = fd.ops.add(T20, T44)
    T46 = fd.ops.cast(T16, dtype=DataType.Half)
    T47 = fd.ops.cast(T45, dtype=DataType.Half)
    T48 = fd.ops.cast(T19, dtype=DataType.Half)
    fd.add_output(T47)
    fd.add_output(T48)
    fd.add_output(T46)
    fd.add_output(T44)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((28, 96), dtype=torch.float16, device='cuda:0'),
    torch.randn((28, 96), dtype=torch.float16, device='cuda:0'),
    torch.randn((28,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((28, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.randn((96,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
