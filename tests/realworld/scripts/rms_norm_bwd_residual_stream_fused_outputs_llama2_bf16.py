# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the Thunder backward of a Llama-2-7B pre-norm residual junction (h = x +
# attn_out; y = RMSNorm(h); the residual stream also carries h onward), in the static-shape
# form of NVIDIA/Fuser tests/python/test_repro.py: the RMSNorm input-gradient plus the
# incoming residual gradient gives one bf16 gradient that is returned twice (for x and for
# attn_out, as Thunder's trace does), the weight gradient is a float sum over [0, 1] cast
# to bf16, and the float grad_h is kept as an output for the next fusion.
# real-sizes: 18=4096 64=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id23(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 18, 64], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 18, 64], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 18, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[64], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[1, 18, 64], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T4, dtype=DataType.Float)
    T8 = fd.ops.broadcast_in_dim(T3, shape=[1, 18, 64], broadcast_dims=[2])
    T9 = fd.ops.cast(T8, dtype=DataType.Float)
    T10 = fd.ops.broadcast_in_dim(T2, shape=[1, 18, 64], broadcast_dims=[0, 1, 2])
    T11 = fd.ops.mul(T6, T10)
    T12 = fd.ops.mul(T5, T11)
    T13 = fd.ops.sum(T12, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    T15 = fd.ops.mul(T5, T9)
    T16 = fd.ops.mul(T15, T10)
    T17 = fd.ops.mul(T15, T6)
    T18 = fd.ops.sum(T17, dims=[2], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.broadcast_in_dim(T18, shape=[1, 18, 1], broadcast_dims=[0, 1])
    S20 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T21 = fd.ops.mul(S20, T19)
    S22 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T23 = fd.ops.pow(T2, S22)
    T24 = fd.ops.mul(T21, T23)
    S25 = fd.define_scalar(64.0000, dtype=DataType.Double)
    S26 = fd.ops.reciprocal(S25)
    T27 = fd.ops.mul(T24, S26)
    T28 = fd.ops.broadcast_in_dim(T27, shape=[1, 18, 64], broadcast_dims=[0, 1, 2])
    S29 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T30 = fd.ops.mul(T28, S29)
    T31 = fd.ops.mul(T30, T6)
    T32 = fd.ops.add(T16, T31)
    T33 = fd.ops.add(T7, T32)
    T34 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    fd.add_output(T34)
    fd.add_output(T34)
    fd.add_output(T14)
    fd.add_output(T33)


with FusionDefinition() as fd:
    nvfuser_fusion_id23(fd)

inputs = [
    torch.testing.make_tensor((1, 18, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 18, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 18, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.testing.make_tensor((64,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 18, 64), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
