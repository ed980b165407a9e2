# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace in which the LayerNorm epsilon stays a runtime number (a
# NumberProxy: define_scalar(None, dtype=DataType.Double) and a Python float in the inputs
# list, as in NVIDIA/Fuser tests/python/test_repro.py repros with scalar inputs) for a
# GPT-3 175B width (12288) on a 216-token batch in fp16: var_mean, eps added from the
# scalar input, rsqrt, affine fp16 parameters; fp16 output and float mean / rstd [N, 1].
# real-sizes: 9=216 96=12288
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id19(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False, stride_order=[0])
    S3 = fd.define_scalar(None, dtype=DataType.Double)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5, T6 = fd.ops.var_mean(T4, dims=[1], correction=0, keepdim=False)
    S7 = fd.ops.size(T0, dim=0)
    V8 = fd.define_vector([S7, 1], dtype=DataType.Int)
    T9 = fd.ops.broadcast_in_dim(T5, shape=V8, broadcast_dims=[0])
    T10 = fd.ops.broadcast_in_dim(T6, shape=V8, broadcast_dims=[0])
    T11 = fd.ops.add(T9, S3)
    T12 = fd.ops.rsqrt(T11)
    V13 = fd.ops.shape(T0)
    T14 = fd.ops.broadcast_in_dim(T10, shape=V13, broadcast_dims=[0, 1])
    T15 = fd.ops.sub(T4, T14)
    T16 = fd.ops.broadcast_in_dim(T12, shape=V13, broadcast_dims=[0, 1])
    T17 = fd.ops.mul(T15, T16)
    T18 = fd.ops.cast(T1, dtype=DataType.Float)
    T19 = fd.ops.broadcast_in_dim(T18, shape=V13, broadcast_dims=[1])
    T20 = fd.ops.mul(T17, T19)
    T21 = fd.ops.cast(T2, dtype=DataType.Float)
    T22 = fd.ops.broadcast_in_dim(T21, shape=V13, broadcast_dims=[1])
    T23 = fd.ops.add(T20, T22)
    T24 = fd.ops.cast(T23, dtype=DataType.Half)
    fd.add_output(T24)
    fd.add_output(T10)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id19(fd)

inputs = [
    torch.randn((9, 96), dtype=torch.float16, device='cuda:0'),
    torch.randn((96,), dtype=torch.float16, device='cuda:0'),
    torch.randn((96,), dtype=torch.float16, device='cuda:0'),
    1e-05,
]
fd.execute(inputs)
