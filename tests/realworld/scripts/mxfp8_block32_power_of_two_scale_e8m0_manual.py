# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the MX (OCP microscaling) fp8 recipe as torchao's to_mx writes it before a
# fused kernel exists (blocks of 32 along K, a shared power-of-two scale
# 2^(floor(log2(amax)) - emax_e4m3) stored as float8_e8m0fnu, values divided by it,
# saturated to +-448 and cast to e4m3; cf. NVIDIA/Fuser tests/python/direct/
# test_narrow_precision.py test_nv_quantization_to_mxfp8, which checks nvFuser's fused op
# against the same math): a bf16 [M, K] activation in float reshaped to [M, K/32, 32],
# block amax, floor(log2), exp2, the e8m0 scales and the e4m3 values out.
# real-sizes: 13=4096 3=128
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 96], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.reshape(T1, new_shape=[13, 3, 32])
    T7 = fd.ops.abs(T6)
    T8 = fd.ops.max(T7, dims=[2], keepdim=False, dtype=DataType.Null)
    S9 = fd.define_scalar(1.00000e-30, dtype=DataType.Double)
    S10 = fd.define_scalar(3.40282e+38, dtype=DataType.Double)
    T11 = fd.ops.clamp(T8, S9, S10)
    T12 = fd.ops.log2(T11)
    T13 = fd.ops.floor(T12)
    S14 = fd.define_scalar(8.00000, dtype=DataType.Double)
    T15 = fd.ops.sub(T13, S14)
    T16 = fd.ops.exp2(T15)
    T17 = fd.ops.cast(T16, dtype=DataType.Float8_e8m0fnu)
    T22 = fd.ops.broadcast_in_dim(T16, shape=[13, 3, 32], broadcast_dims=[0, 1])
    T23 = fd.ops.div(T6, T22)
    S24 = fd.define_scalar(448.000, dtype=DataType.Double)
    S25 = fd.define_scalar(-448.000, dtype=DataType.Double)
    T26 = fd.ops.clamp(T23, S25, S24)
    T27 = fd.ops.cast(T26, dtype=DataType.Float8_e4m3fn)
    T31 = fd.ops.reshape(T27, new_shape=[13, 96])
    fd.add_output(T31)
    fd.add_output(T17)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 96), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
