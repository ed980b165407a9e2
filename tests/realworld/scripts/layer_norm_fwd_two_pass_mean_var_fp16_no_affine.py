# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the explicit (two-pass) LayerNorm that hand-written modules and older PrimTorch
# decompositions hand nvFuser instead of var_mean (the mean as sum * reciprocal(size), the
# biased variance as a second sum of squared deviations), here without an affine step
# (elementwise_affine=False) on a GPT-2 XL width: fp16 in and out, rows symbolic, the
# divisor taken from fd.ops.size. Mean and rstd [N, 1] are extra float outputs.
# real-sizes: 24=8192 50=1600
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    S2 = fd.ops.size(T0, dim=0)
    S3 = fd.ops.size(T0, dim=1)
    S4 = fd.ops.reciprocal(S3)
    T5 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.mul(T5, S4)
    V7 = fd.define_vector([S2, 1], dtype=DataType.Int)
    T8 = fd.ops.broadcast_in_dim(T6, shape=V7, broadcast_dims=[0])
    V9 = fd.ops.shape(T1)
    T10 = fd.ops.broadcast_in_dim(T8, shape=V9, broadcast_dims=[0, 1])
    T11 = fd.ops.sub(T1, T10)
    T12 = fd.ops.mul(T11, T11)
    T13 = fd.ops.sum(T12, dims=[1], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.mul(T13, S4)
    T15 = fd.ops.broadcast_in_dim(T14, shape=V7, broadcast_dims=[0])
    S16 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T17 = fd.ops.add(T15, S16)
    T18 = fd.ops.rsqrt(T17)
    T19 = fd.ops.broadcast_in_dim(T18, shape=V9, broadcast_dims=[0, 1])
    T20 = fd.ops.mul(T11, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.Half)
    fd.add_output(T21)
    fd.add_output(T8)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((24, 50), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
