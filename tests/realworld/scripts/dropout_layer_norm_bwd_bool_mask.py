# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_dropout_layernorm_bwd.py
# (dropout_layernorm_bwd_fusion, the backward of layernorm(input2 + dropout(input1))): a Bool
# dropout mask input cast to float, the saved mean [N] and invstd [N, 1], half inputs, the
# dropout scale 1/(1-p) applied twice, `T6.size(1)` through fd.ops.reciprocal and
# `T6.shape()` as a shape; grad_input1, grad_input2, grad_weight, grad_bias out.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T7 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1f = fd.ops.cast(T1, dtype=DataType.Float)
    T4f = fd.ops.cast(T4, dtype=DataType.Float)
    T5f = fd.ops.cast(T5, dtype=DataType.Float)
    T6f = fd.ops.cast(T6, dtype=DataType.Float)
    T7f = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.mul(T6f, T1f)
    S10 = fd.define_scalar(1.25, dtype=DataType.Double)
    T11 = fd.ops.mul(T9, S10)
    T12 = fd.ops.add(T7f, T11)
    V15 = fd.define_vector([T6.size(0), 1], dtype=DataType.Int)
    T16 = fd.ops.broadcast_in_dim(T2, shape=V15, broadcast_dims=[0])
    V19 = T6.shape()
    T20 = fd.ops.broadcast_in_dim(T16, shape=V19, broadcast_dims=[0, 1])
    T21 = fd.ops.sub(T12, T20)
    T25 = fd.ops.broadcast_in_dim(T3, shape=V19, broadcast_dims=[0, 1])
    T26 = fd.ops.mul(T21, T25)
    T30 = fd.ops.broadcast_in_dim(T5f, shape=V19, broadcast_dims=[1])
    T35 = fd.ops.sum(T4f, dims=[0], keepdim=False, dtype=DataType.Null)
    T37 = fd.ops.mul(T4f, T30)
    T38 = fd.ops.mul(T4f, T26)
    T39 = fd.ops.sum(T38, dims=[0], keepdim=False, dtype=DataType.Null)
    T41 = fd.ops.mul(T37, T25)
    T42 = fd.ops.mul(T37, T21)
    T43 = fd.ops.sum(T42, dims=[1], keepdim=False, dtype=DataType.Null)
    T47 = fd.ops.broadcast_in_dim(T43, shape=V15, broadcast_dims=[0])
    T48 = fd.ops.neg(T41)
    T49 = fd.ops.sum(T48, dims=[1], keepdim=False, dtype=DataType.Null)
    T53 = fd.ops.broadcast_in_dim(T49, shape=V15, broadcast_dims=[0])
    S54 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T55 = fd.ops.mul(S54, T47)
    S56 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T57 = fd.ops.pow(T3, S56)
    T58 = fd.ops.mul(T55, T57)
    T61 = fd.ops.sum(T53, dims=[1], keepdim=False, dtype=DataType.Null)
    T62 = fd.ops.sum(T58, dims=[1], keepdim=False, dtype=DataType.Null)
    T66 = fd.ops.broadcast_in_dim(T62, shape=V15, broadcast_dims=[0])
    T70 = fd.ops.broadcast_in_dim(T66, shape=V19, broadcast_dims=[0, 1])
    T74 = fd.ops.broadcast_in_dim(T2, shape=V15, broadcast_dims=[0])
    T78 = fd.ops.broadcast_in_dim(T74, shape=V19, broadcast_dims=[0, 1])
    S79 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T80 = fd.ops.mul(S79, T70)
    T81 = fd.ops.sub(T12, T78)
    T82 = fd.ops.mul(T80, T81)
    S84 = fd.ops.reciprocal(T6.size(1))
    T85 = fd.ops.mul(T82, S84)
    T89 = fd.ops.broadcast_in_dim(T61, shape=V15, broadcast_dims=[0])
    T93 = fd.ops.broadcast_in_dim(T89, shape=V19, broadcast_dims=[0, 1])
    T95 = fd.ops.mul(S84, T93)
    T96 = fd.ops.add(T85, T95)
    T97 = fd.ops.add(T41, T96)
    T100 = fd.ops.mul(T97, S10)
    T101 = fd.ops.mul(T100, T1f)
    T102 = fd.ops.cast(T101, dtype=DataType.Half)
    T103 = fd.ops.cast(T97, dtype=DataType.Half)
    T104 = fd.ops.cast(T39, dtype=DataType.Half)
    T105 = fd.ops.cast(T35, dtype=DataType.Half)
    fd.add_output(T102)
    fd.add_output(T103)
    fd.add_output(T104)
    fd.add_output(T105)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.testing.make_tensor((36, 150), dtype=torch.bool, device='cuda:0'),
    torch.randn((36,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((36, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=1.5),
    torch.randn((36, 150), dtype=torch.float16, device='cuda:0'),
    torch.randn((150,), dtype=torch.float16, device='cuda:0'),
    torch.randn((36, 150), dtype=torch.float16, device='cuda:0'),
    torch.randn((36, 150), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
