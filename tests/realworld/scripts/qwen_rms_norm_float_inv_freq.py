# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3682 (Thunder test_hf_for_nemo, Qwen2.5): an RMS norm
# of a bf16 [1, T, C] activation computed in float (pow by 2.0, sum, divide by the
# size, add eps, rsqrt), scaled by a bf16 weight; in the same fusion the rotary
# frequencies: an inverse-frequency float tensor [1, 1, D/2] times positions, cat with
# itself, cos and sin cast to bf16.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 32, 28], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 1, 32], contiguity=[None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[28], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[1, 4, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    S5 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T6 = fd.ops.pow(T4, S5)
    T7 = fd.ops.sum(T6, dims=[2], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[1, 32, 1], broadcast_dims=[0, 1])
    S9 = fd.define_scalar(28.0000, dtype=DataType.Double)
    S10 = fd.ops.reciprocal(S9)
    T11 = fd.ops.mul(T8, S10)
    S12 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T13 = fd.ops.add(T11, S12)
    T14 = fd.ops.rsqrt(T13)
    T15 = fd.ops.broadcast_in_dim(T14, shape=[1, 32, 28], broadcast_dims=[0, 1, 2])
    T16 = fd.ops.mul(T4, T15)
    T17 = fd.ops.cast(T16, dtype=DataType.BFloat16)
    T18 = fd.ops.broadcast_in_dim(T2, shape=[1, 32, 28], broadcast_dims=[2])
    T19 = fd.ops.cast(T18, dtype=DataType.Float)
    T20 = fd.ops.cast(T17, dtype=DataType.Float)
    T21 = fd.ops.mul(T19, T20)
    T22 = fd.ops.cast(T21, dtype=DataType.BFloat16)
    T23 = fd.ops.broadcast_in_dim(T3, shape=[1, 4, 32], broadcast_dims=[0, 1, 2])
    T24 = fd.ops.broadcast_in_dim(T1, shape=[1, 4, 32], broadcast_dims=[0, 1, 2])
    T25 = fd.ops.mul(T23, T24)
    T26 = fd.ops.permute(T25, dims=[0, 2, 1])
    T27 = fd.ops.cat([T26, T26], dim=-1, manual_padding=0)
    T28 = fd.ops.cos(T27)
    T29 = fd.ops.sin(T27)
    S30 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T31 = fd.ops.mul(T28, S30)
    T32 = fd.ops.mul(T29, S30)
    T33 = fd.ops.cast(T31, dtype=DataType.BFloat16)
    T34 = fd.ops.cast(T32, dtype=DataType.BFloat16)
    fd.add_output(T14)
    fd.add_output(T22)
    fd.add_output(T33)
    fd.add_output(T34)

with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((1, 32, 28), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 1, 32), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((28,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 4, 1), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
