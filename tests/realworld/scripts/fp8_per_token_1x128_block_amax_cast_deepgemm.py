# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on DeepGEMM's per_token_cast_to_fp8 (the 1x128 activation quantization of
# DeepSeek-V3's fp8 GEMMs: x.view(m, -1, 128), amax over each 128-wide block in float,
# clamp(1e-4), x * (448 / amax) cast to e4m3, scales amax / 448) as Thunder hands it to
# nvFuser: a bf16 [M, K] activation (K = 7168) reshaped to [M, K/128, 128], abs, a float max
# over the block axis, the scale broadcast back through a [M, K/128, 1] step, the cast to
# Float8_e4m3fn reshaped to [M, K]; the [M, K/128] float scales as the second output.
# real-sizes: 16=128 13=4096 3=56
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 48], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.reshape(T0, new_shape=[13, 3, 16])
    T6 = fd.ops.abs(T5)
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.max(T7, dims=[2], keepdim=False, dtype=DataType.Null)
    T12 = fd.ops.reshape(T8, new_shape=[13, 3])
    S13 = fd.define_scalar(0.00010, dtype=DataType.Double)
    S14 = fd.define_scalar(3.40282e+38, dtype=DataType.Double)
    T15 = fd.ops.clamp(T12, S13, S14)
    S16 = fd.define_scalar(448.000, dtype=DataType.Double)
    T17 = fd.ops.div(S16, T15)
    T22 = fd.ops.broadcast_in_dim(T17, shape=[13, 3, 1], broadcast_dims=[0, 1])
    T27 = fd.ops.broadcast_in_dim(T22, shape=[13, 3, 16], broadcast_dims=[0, 1, 2])
    T28 = fd.ops.cast(T5, dtype=DataType.Float)
    T29 = fd.ops.mul(T28, T27)
    T30 = fd.ops.cast(T29, dtype=DataType.Float8_e4m3fn)
    T34 = fd.ops.reshape(T30, new_shape=[13, 48])
    T35 = fd.ops.div(T15, S16)
    fd.add_output(T34)
    fd.add_output(T35)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 48), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
