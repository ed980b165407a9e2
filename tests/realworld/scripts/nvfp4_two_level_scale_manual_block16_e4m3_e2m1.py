# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on pytorch_nvfp4_quantize in NVIDIA/Fuser tests/python/direct_utils/
# narrow_precision.py (the reference two-level nvfp4 quantization: blocks of 16 along K,
# block_scale = amax / 6, times the per-tensor global scale, clamped to [e4m3 tiny, 448] and
# stored as Float8_e4m3fn, the values divided by block_scale / global_scale, clamped to +-6
# and cast to Float4_e2m1fn) written out in fd.ops as a Thunder trace of it would be: a bf16
# [M, K] activation in float reshaped to [M, K/16, 16], the 0-dim global scale input
# broadcast to the scales' shape.
# real-sizes: 13=4096 48=7168 3=448
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 48], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False, stride_order=[])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T7 = fd.ops.reshape(T2, new_shape=[13, 3, 16])
    T8 = fd.ops.abs(T7)
    T9 = fd.ops.max(T8, dims=[2], keepdim=False, dtype=DataType.Null)
    S10 = fd.define_scalar(6.00000, dtype=DataType.Double)
    T11 = fd.ops.div(T9, S10)
    T15 = fd.ops.broadcast_in_dim(T1, shape=[13, 3], broadcast_dims=[])
    T16 = fd.ops.mul(T11, T15)
    S17 = fd.define_scalar(0.01562, dtype=DataType.Double)
    S18 = fd.define_scalar(448.000, dtype=DataType.Double)
    T19 = fd.ops.clamp(T16, S17, S18)
    T20 = fd.ops.cast(T19, dtype=DataType.Float8_e4m3fn)
    T21 = fd.ops.div(T19, T15)
    T26 = fd.ops.broadcast_in_dim(T21, shape=[13, 3, 1], broadcast_dims=[0, 1])
    T31 = fd.ops.broadcast_in_dim(T26, shape=[13, 3, 16], broadcast_dims=[0, 1, 2])
    T32 = fd.ops.div(T7, T31)
    S33 = fd.define_scalar(-6.00000, dtype=DataType.Double)
    T34 = fd.ops.clamp(T32, S33, S10)
    T38 = fd.ops.reshape(T34, new_shape=[13, 48])
    T39 = fd.ops.cast(T38, dtype=DataType.Float4_e2m1fn)
    fd.add_output(T39)
    fd.add_output(T20)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.full((), 200.0, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
