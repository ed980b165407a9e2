# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the HF Whisper encoder stem after its second conv1d (bias, gelu, permute(0, 2, 1),
# + embed_positions) as Thunder hands the elementwise part to nvFuser: the bf16 conv output
# [B, C, T] (1280 channels, 1500 frames for whisper-large) plus the per-channel bias in float,
# exact GELU as 0.5 * x * (1 + erf(x / sqrt(2))), cast to bf16, the 3-D transpose to
# [B, T, C] and the [T, C] positional embedding added; a transpose-scheduler shaped
# fusion.
# real-sizes: 20=1280 15=1500
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 20, 15], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[20], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[15, 20], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T7 = fd.ops.broadcast_in_dim(T1, shape=[2, 20, 15], broadcast_dims=[1])
    T8 = fd.ops.cast(T0, dtype=DataType.Float)
    T9 = fd.ops.cast(T7, dtype=DataType.Float)
    T10 = fd.ops.add(T8, T9)
    S11 = fd.define_scalar(0.70711, dtype=DataType.Double)
    T12 = fd.ops.mul(T10, S11)
    T13 = fd.ops.erf(T12)
    S14 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S15 = fd.define_scalar(0.50000, dtype=DataType.Double)
    T16 = fd.ops.mul(T10, S15)
    T17 = fd.ops.add(T13, S14)
    T18 = fd.ops.mul(T16, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    T20 = fd.ops.permute(T19, dims=[0, 2, 1])
    T25 = fd.ops.broadcast_in_dim(T2, shape=[2, 15, 20], broadcast_dims=[1, 2])
    T26 = fd.ops.cast(T20, dtype=DataType.Float)
    T27 = fd.ops.cast(T25, dtype=DataType.Float)
    T28 = fd.ops.add(T26, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    fd.add_output(T29)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 20, 15), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((20,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((15, 20), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
