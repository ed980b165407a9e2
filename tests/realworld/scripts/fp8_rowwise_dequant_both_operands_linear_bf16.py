# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the fp8 fallback path of Thunder's / torchao's float8 linear when no scaled
# matmul is available (dequantize, then an ordinary bf16 GEMM; nvFuser has fd.ops.linear
# but this engine has no scaled_mm): an e4m3 activation [M, K] and e4m3 weight [N, K] cast to
# float and multiplied by their per-row scales [M, 1] / [N, 1] (broadcast over K), cast to
# bf16 and fed to fd.ops.linear; the fp8 inputs are made with .to(torch.float8_e4m3fn).
# real-sizes: 24=4096 20=14336 13=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.Float8_e4m3fn, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[20, 24], contiguity=[True, True], dtype=DataType.Float8_e4m3fn, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[20, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T8 = fd.ops.broadcast_in_dim(T1, shape=[13, 24], broadcast_dims=[0, 1])
    T9 = fd.ops.mul(T4, T8)
    T10 = fd.ops.cast(T2, dtype=DataType.Float)
    T14 = fd.ops.broadcast_in_dim(T3, shape=[20, 24], broadcast_dims=[0, 1])
    T15 = fd.ops.mul(T10, T14)
    T16 = fd.ops.cast(T9, dtype=DataType.BFloat16)
    T17 = fd.ops.cast(T15, dtype=DataType.BFloat16)
    T18 = fd.ops.linear(T16, T17)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((13, 24), device='cuda:0').to(torch.float8_e4m3fn),
    torch.testing.make_tensor((13, 1), dtype=torch.float32, device='cuda:0', low=0.001, high=0.01),
    torch.randn((20, 24), device='cuda:0').to(torch.float8_e4m3fn),
    torch.testing.make_tensor((20, 1), dtype=torch.float32, device='cuda:0', low=0.001, high=0.01),
]
fd.execute(inputs)
