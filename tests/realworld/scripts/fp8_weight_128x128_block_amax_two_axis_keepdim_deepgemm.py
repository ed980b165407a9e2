# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on DeepGEMM's per_block_cast_to_fp8 (the 128x128 weight quantization of
# DeepSeek-V3: x.view(m/128, 128, n/128, 128), amax over dims (1, 3) with keepdim, clamp
# 1e-4, x * (448 / amax) cast to e4m3, scales amax / 448 viewed as [m/128, n/128]) as a
# Thunder trace hands it to nvFuser: a bf16 weight [M, N] reshaped 4-D, a two-axis float
# max with keepdim broadcast straight back, Float8_e4m3fn values reshaped to [M, N] and the
# block scales squeezed by a reshape.
# real-sizes: 16=128 5=16 3=56
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[80, 48], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T6 = fd.ops.reshape(T0, new_shape=[5, 16, 3, 16])
    T7 = fd.ops.abs(T6)
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.max(T8, dims=[1, 3], keepdim=True, dtype=DataType.Null)
    S10 = fd.define_scalar(0.00010, dtype=DataType.Double)
    S11 = fd.define_scalar(3.40282e+38, dtype=DataType.Double)
    T12 = fd.ops.clamp(T9, S10, S11)
    S13 = fd.define_scalar(448.000, dtype=DataType.Double)
    T14 = fd.ops.div(S13, T12)
    T20 = fd.ops.broadcast_in_dim(T14, shape=[5, 16, 3, 16], broadcast_dims=[0, 1, 2, 3])
    T21 = fd.ops.cast(T6, dtype=DataType.Float)
    T22 = fd.ops.mul(T21, T20)
    T23 = fd.ops.cast(T22, dtype=DataType.Float8_e4m3fn)
    T27 = fd.ops.reshape(T23, new_shape=[80, 48])
    T28 = fd.ops.div(T12, S13)
    T32 = fd.ops.reshape(T28, new_shape=[5, 3])
    fd.add_output(T27)
    fd.add_output(T32)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((80, 48), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
