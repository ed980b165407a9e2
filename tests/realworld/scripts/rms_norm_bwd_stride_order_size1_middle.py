# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_repro.py test_ws_tma_normalization3 (a Mistral-7B RMSNorm
# backward, "allocation domain" errors): an input of shape [1, N, H] with
# stride_order=[1, 2, 0] and contiguity=[True, None, True] given in allocation order (the
# size-1 axis sits between N and H in memory), the rest as in an RMSNorm backward with the
# rstd as a [1, N, 1] input. Shrunk from [4096, 4096] to [16, 32].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[16, 32], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[32], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[1, 16, 32], contiguity=[True, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 2, 0])
    T3 = fd.define_tensor(shape=[1, 16, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 16, 32], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T9 = fd.ops.reshape(T0, new_shape=[1, 16, 32])
    T10 = fd.ops.cast(T1, dtype=DataType.Float)
    T11 = fd.ops.cast(T9, dtype=DataType.Float)
    T16 = fd.ops.broadcast_in_dim(T10, shape=[1, 16, 32], broadcast_dims=[2])
    T17 = fd.ops.mul(T16, T11)
    T18 = fd.ops.cast(T2, dtype=DataType.Float)
    T19 = fd.ops.mul(T18, T17)
    T20 = fd.ops.sum(T19, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T25 = fd.ops.broadcast_in_dim(T20, shape=[1, 16, 1], broadcast_dims=[1])
    S26 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T27 = fd.ops.pow(T3, S26)
    S28 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T29 = fd.ops.mul(S28, T25)
    T30 = fd.ops.mul(T29, T27)
    S31 = fd.define_scalar(32.0000, dtype=DataType.Double)
    S32 = fd.ops.reciprocal(S31)
    T33 = fd.ops.mul(T30, S32)
    T34 = fd.ops.sum(T33, dims=[0, 2], keepdim=False, dtype=DataType.Null)
    T38 = fd.ops.broadcast_in_dim(T34, shape=[1, 16], broadcast_dims=[1])
    T43 = fd.ops.broadcast_in_dim(T38, shape=[1, 16, 1], broadcast_dims=[0, 1])
    T48 = fd.ops.broadcast_in_dim(T43, shape=[1, 16, 32], broadcast_dims=[0, 1, 2])
    T53 = fd.ops.broadcast_in_dim(T3, shape=[1, 16, 32], broadcast_dims=[0, 1, 2])
    T54 = fd.ops.mul(T18, T48)
    T55 = fd.ops.mul(T53, T17)
    T56 = fd.ops.add(T55, T54)
    T57 = fd.ops.add(T56, T54)
    T58 = fd.ops.mul(T18, T53)
    T59 = fd.ops.cast(T4, dtype=DataType.Float)
    T60 = fd.ops.mul(T58, T11)
    T61 = fd.ops.add(T59, T57)
    T62 = fd.ops.sum(T60, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T63 = fd.ops.cast(T61, dtype=DataType.BFloat16)
    T64 = fd.ops.cast(T62, dtype=DataType.BFloat16)
    fd.add_output(T64)
    fd.add_output(T63)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 32), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((32,), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((1, 16, 32), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((1, 16, 1), dtype=torch.float32, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((1, 16, 32), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
]
fd.validate(inputs)
