# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Megatron-LM's fused bias_gelu (megatron/core/fusions/fused_bias_gelu.py:
# x = bias + y; x * 0.5 * (1.0 + tanh(0.79788456 * x * (1 + 0.044715 * x * x)))) as a
# Thunder trace of the MLP's fc1 epilogue hands it to nvFuser: the sequence-first bf16
# activation [S, B, 4H] plus the [4H] bias broadcast over sequence and batch, the tanh
# approximation written exactly in Megatron's association order in float, bf16 out.
# real-sizes: 24=16384 13=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 2, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T6 = fd.ops.broadcast_in_dim(T1, shape=[13, 2, 24], broadcast_dims=[2])
    T7 = fd.ops.cast(T6, dtype=DataType.Float)
    T8 = fd.ops.cast(T0, dtype=DataType.Float)
    T9 = fd.ops.add(T7, T8)
    S10 = fd.define_scalar(0.50000, dtype=DataType.Double)
    S11 = fd.define_scalar(0.79788, dtype=DataType.Double)
    S12 = fd.define_scalar(0.04471, dtype=DataType.Double)
    S13 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T14 = fd.ops.mul(T9, S10)
    T15 = fd.ops.mul(T9, S11)
    T16 = fd.ops.mul(T9, S12)
    T17 = fd.ops.mul(T16, T9)
    T18 = fd.ops.add(S13, T17)
    T19 = fd.ops.mul(T15, T18)
    T20 = fd.ops.tanh(T19)
    T21 = fd.ops.add(S13, T20)
    T22 = fd.ops.mul(T14, T21)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 2, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
