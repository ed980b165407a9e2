# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on torchao's float8 rowwise recipe (hp_tensor_to_float8_dynamic with
# axiswise_dim=-1: amax = max(abs(x), dim=-1, keepdim=True), scale = 448 / clamp(amax, 1e-12),
# to_fp8_saturated) as Thunder hands the cast to nvFuser, next to
# NVIDIA/Fuser tests/python/direct_utils/narrow_precision.py's helpers: a bf16 activation
# [M, K] in float, the row amax with keepdim, the scale broadcast back, the product clamped
# to +-448 and cast to Float8_e4m3fn; the per-row inverse scale [M, 1] is the second
# output (for the scaled matmul).
# real-sizes: 24=4096 13=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.abs(T1)
    T3 = fd.ops.max(T2, dims=[1], keepdim=True, dtype=DataType.Null)
    S4 = fd.define_scalar(1.00000e-12, dtype=DataType.Double)
    S5 = fd.define_scalar(3.40282e+38, dtype=DataType.Double)
    T6 = fd.ops.clamp(T3, S4, S5)
    S7 = fd.define_scalar(448.000, dtype=DataType.Double)
    T8 = fd.ops.div(S7, T6)
    T12 = fd.ops.broadcast_in_dim(T8, shape=[13, 24], broadcast_dims=[0, 1])
    T13 = fd.ops.mul(T1, T12)
    S14 = fd.define_scalar(-448.000, dtype=DataType.Double)
    T15 = fd.ops.clamp(T13, S14, S7)
    T16 = fd.ops.cast(T15, dtype=DataType.Float8_e4m3fn)
    T17 = fd.ops.reciprocal(T8)
    fd.add_output(T16)
    fd.add_output(T17)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
