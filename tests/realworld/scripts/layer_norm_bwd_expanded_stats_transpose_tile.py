# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_repro.py test_ws_tma_normalization2 (LayerNorm backward
# from several models) at [2304, 128] = [288 * 8, 128]: the product of the grad with the
# expanded rstd [B, S, 1 ex H] (the rstd's innermost non-broadcast axis is S, the grad's is
# H) once went to the transpose scheduler, staging the rstd through a shared-memory tile with
# a broadcast tile axis; the rstd cannot lead a transpose group (its H is a broadcast), so it
# is a pointwise kernel now, as nvFuser's; and the weight [H]
# broadcast to [B, S, H] next to a reshape (a 1-D pointwise schedule). Shrunk from
# [147456, 128] = [288 * 512, 128].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2304, 128], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[128], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[288, 8], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[288, 8, 128], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[288, 8, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T9 = fd.ops.reshape(T0, new_shape=[288, 8, 128])
    T14 = fd.ops.broadcast_in_dim(T1, shape=[288, 8, 128], broadcast_dims=[2])
    T19 = fd.ops.broadcast_in_dim(T2, shape=[288, 8, 1], broadcast_dims=[0, 1])
    T20 = fd.ops.cast(T9, dtype=DataType.Float)
    T21 = fd.ops.cast(T14, dtype=DataType.Float)
    T26 = fd.ops.broadcast_in_dim(T19, shape=[288, 8, 128], broadcast_dims=[0, 1, 2])
    T27 = fd.ops.cast(T3, dtype=DataType.Float)
    T28 = fd.ops.mul(T21, T20)
    T29 = fd.ops.sub(T27, T26)
    T30 = fd.ops.mul(T29, T28)
    T31 = fd.ops.sum(T30, dims=[2], keepdim=False, dtype=DataType.Null)
    T36 = fd.ops.broadcast_in_dim(T31, shape=[288, 8, 1], broadcast_dims=[0, 1])
    T41 = fd.ops.broadcast_in_dim(T4, shape=[288, 8, 128], broadcast_dims=[0, 1, 2])
    S42 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T43 = fd.ops.pow(T4, S42)
    S44 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T45 = fd.ops.mul(S44, T36)
    T46 = fd.ops.mul(T41, T28)
    T47 = fd.ops.mul(T45, T43)
    T48 = fd.ops.neg(T46)
    T49 = fd.ops.sum(T47, dims=[2], keepdim=False, dtype=DataType.Null)
    T50 = fd.ops.sum(T48, dims=[2], keepdim=False, dtype=DataType.Null)
    T55 = fd.ops.broadcast_in_dim(T2, shape=[288, 8, 1], broadcast_dims=[0, 1])
    T60 = fd.ops.broadcast_in_dim(T49, shape=[288, 8, 1], broadcast_dims=[0, 1])
    T65 = fd.ops.broadcast_in_dim(T50, shape=[288, 8, 1], broadcast_dims=[0, 1])
    T70 = fd.ops.broadcast_in_dim(T55, shape=[288, 8, 128], broadcast_dims=[0, 1, 2])
    T75 = fd.ops.broadcast_in_dim(T60, shape=[288, 8, 128], broadcast_dims=[0, 1, 2])
    T76 = fd.ops.sum(T65, dims=[2], keepdim=False, dtype=DataType.Null)
    T77 = fd.ops.sub(T27, T70)
    S78 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T79 = fd.ops.mul(S78, T75)
    T84 = fd.ops.broadcast_in_dim(T76, shape=[288, 8, 1], broadcast_dims=[0, 1])
    T85 = fd.ops.mul(T79, T77)
    T90 = fd.ops.broadcast_in_dim(T84, shape=[288, 8, 128], broadcast_dims=[0, 1, 2])
    S91 = fd.define_scalar(128.0000, dtype=DataType.Double)
    S92 = fd.ops.reciprocal(S91)
    T93 = fd.ops.mul(T85, S92)
    S94 = fd.define_scalar(0.0078125, dtype=DataType.Double)
    T95 = fd.ops.mul(S94, T90)
    T96 = fd.ops.add(T95, T93)
    T97 = fd.ops.add(T46, T96)
    T98 = fd.ops.cast(T97, dtype=DataType.BFloat16)
    T99 = fd.ops.mul(T29, T41)
    T100 = fd.ops.mul(T99, T20)
    T101 = fd.ops.cast(T9, dtype=DataType.Float)
    T105 = fd.ops.reshape(T98, new_shape=[2304, 128])
    T106 = fd.ops.sum(T97, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T107 = fd.ops.sum(T100, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T108 = fd.ops.sum(T101, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T109 = fd.ops.permute(T105, dims=[1, 0])
    T110 = fd.ops.cast(T106, dtype=DataType.BFloat16)
    T111 = fd.ops.cast(T107, dtype=DataType.BFloat16)
    T112 = fd.ops.cast(T108, dtype=DataType.BFloat16)
    fd.add_output(T109)
    fd.add_output(T110)
    fd.add_output(T105)
    fd.add_output(T98)
    fd.add_output(T111)
    fd.add_output(T112)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2304, 128), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((128,), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((288, 8), dtype=torch.float32, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((288, 8, 128), dtype=torch.bfloat16, device='cuda:0', low=-2, high=2),
    torch.testing.make_tensor((288, 8, 1), dtype=torch.float32, device='cuda:0', low=-2, high=2),
]
fd.validate(inputs)
