# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on per-tensor fp8 scaling as in torchao float8 (tensor_to_scale, to_fp8_saturated)
# and the fp8 helpers of NVIDIA/Fuser tests/python/direct_utils/narrow_precision.py, as
# Thunder hands them to nvFuser: amax = max(abs(x)) over every dim (a 0-dim result), the
# scale 448 / clamp(amax, eps), x * scale clamped to the e4m3 range and cast to
# Float8_e4m3fn; the gradient path uses e5m2 (57344); the inverse scales are outputs too.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.abs(T2)
    T4 = fd.ops.max(T3, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    S5 = fd.define_scalar(1.00000e-12, dtype=DataType.Double)
    S6 = fd.define_scalar(3.40282e+38, dtype=DataType.Double)
    T7 = fd.ops.clamp(T4, S5, S6)
    S8 = fd.define_scalar(448.000, dtype=DataType.Double)
    T9 = fd.ops.reciprocal(T7)
    T10 = fd.ops.mul(T9, S8)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[64, 96], broadcast_dims=[])
    T12 = fd.ops.mul(T2, T11)
    S13 = fd.define_scalar(-448.000, dtype=DataType.Double)
    T14 = fd.ops.clamp(T12, S13, S8)
    T15 = fd.ops.cast(T14, dtype=DataType.Float8_e4m3fn)
    T16 = fd.ops.reciprocal(T10)
    T17 = fd.ops.cast(T1, dtype=DataType.Float)
    T18 = fd.ops.abs(T17)
    T19 = fd.ops.max(T18, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.clamp(T19, S5, S6)
    S21 = fd.define_scalar(57344.0, dtype=DataType.Double)
    T22 = fd.ops.div(S21, T20)
    T23 = fd.ops.broadcast_in_dim(T22, shape=[64, 96], broadcast_dims=[])
    T24 = fd.ops.mul(T17, T23)
    S25 = fd.define_scalar(-57344.0, dtype=DataType.Double)
    T26 = fd.ops.clamp(T24, S25, S21)
    T27 = fd.ops.cast(T26, dtype=DataType.Float8_e5m2)
    T28 = fd.ops.reciprocal(T22)
    fd.add_output(T15)
    fd.add_output(T16)
    fd.add_output(T4)
    fd.add_output(T27)
    fd.add_output(T28)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.randn((64, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((64, 96), dtype=torch.bfloat16, device='cuda:0', low=-0.01, high=0.01),
]
fd.execute(inputs)
