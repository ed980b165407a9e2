# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_dropout_rmsnorm_bwd.py (the backward of
# rmsnorm(input2 + dropout(input1, p=0.2)) from the saved rms = sqrt(mean(x^2) + eps)) at an
# odd width (6145 = 6144 + 1, rows not vectorizable): fp16 inputs, a Bool keep-mask cast to
# float, reciprocal of the broadcast rms, pow(rms, 2), the row count factor from
# fd.ops.reciprocal(T5.size(1)); grad_input1 (through the mask and the 1/(1-p) scale),
# grad_input2 and grad_weight in fp16.
# real-sizes: 24=2048 97=6145
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id8(fd : FusionDefinition) -> None :
    T5 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False)
    T7 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    T8 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T9 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T10 = fd.ops.cast(T4, dtype=DataType.Float)
    T11 = fd.ops.cast(T5, dtype=DataType.Float)
    T12 = fd.ops.cast(T6, dtype=DataType.Float)
    T13 = fd.ops.cast(T8, dtype=DataType.Float)
    T14 = fd.ops.cast(T9, dtype=DataType.Float)
    T15 = fd.ops.mul(T11, T12)
    S16 = fd.define_scalar(1.25000, dtype=DataType.Double)
    T17 = fd.ops.mul(T15, S16)
    T18 = fd.ops.add(T10, T17)
    V19 = T5.shape()
    T20 = fd.ops.broadcast_in_dim(T7, shape=V19, broadcast_dims=[0, 1])
    T21 = fd.ops.reciprocal(T20)
    T22 = fd.ops.mul(T18, T21)
    T23 = fd.ops.broadcast_in_dim(T14, shape=V19, broadcast_dims=[1])
    T24 = fd.ops.mul(T13, T22)
    T25 = fd.ops.mul(T13, T23)
    T26 = fd.ops.sum(T24, dims=[0], keepdim=False, dtype=DataType.Null)
    T27 = fd.ops.mul(T25, T21)
    T28 = fd.ops.neg(T25)
    T29 = fd.ops.mul(T28, T18)
    S30 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T31 = fd.ops.pow(T20, S30)
    T32 = fd.ops.reciprocal(T31)
    T33 = fd.ops.mul(T29, T32)
    T34 = fd.ops.sum(T33, dims=[1], keepdim=False, dtype=DataType.Null)
    V35 = fd.define_vector([T5.size(0), 1], dtype=DataType.Int)
    T36 = fd.ops.broadcast_in_dim(T34, shape=V35, broadcast_dims=[0])
    T37 = fd.ops.mul(S30, T7)
    T38 = fd.ops.reciprocal(T37)
    T39 = fd.ops.mul(T36, T38)
    S40 = fd.ops.reciprocal(T5.size(1))
    T41 = fd.ops.mul(T39, S40)
    T42 = fd.ops.sum(T41, dims=[1], keepdim=False, dtype=DataType.Null)
    T43 = fd.ops.broadcast_in_dim(T42, shape=V35, broadcast_dims=[0])
    T44 = fd.ops.broadcast_in_dim(T43, shape=V19, broadcast_dims=[0, 1])
    T45 = fd.ops.mul(T44, S30)
    T46 = fd.ops.mul(T45, T18)
    T47 = fd.ops.add(T27, T46)
    T48 = fd.ops.mul(T47, S16)
    T49 = fd.ops.mul(T48, T12)
    T50 = fd.ops.cast(T49, dtype=DataType.Half)
    T51 = fd.ops.cast(T47, dtype=DataType.Half)
    T52 = fd.ops.cast(T26, dtype=DataType.Half)
    fd.add_output(T50)
    fd.add_output(T51)
    fd.add_output(T52)


with FusionDefinition() as fd:
    nvfuser_fusion_id8(fd)

inputs = [
    torch.randn((24, 97), dtype=torch.float16, device='cuda:0'),
    torch.randn((24, 97), dtype=torch.float16, device='cuda:0'),
    torch.rand((24, 97), device='cuda:0') < 0.8,
    torch.testing.make_tensor((24, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.randn((24, 97), dtype=torch.float16, device='cuda:0'),
    torch.randn((97,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
