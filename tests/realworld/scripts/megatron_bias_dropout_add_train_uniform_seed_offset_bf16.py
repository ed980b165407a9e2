# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Megatron-LM's bias_dropout_add_fused_train (residual + dropout(x + bias, 0.1))
# as a Thunder trace hands it to nvFuser (cf. NVIDIA/Fuser issue #3607 and
# benchmarks/python/test_dropout_layernorm_fwd.py): the dropout mask drawn with
# fd.ops.uniform from runtime Int seed/offset scalar inputs and compared with the keep
# probability, the sequence-first [S, B, H] bf16 activation plus its [H] bias, masked and
# scaled by 1/0.9 in float, added to the residual; bf16 out and the bool mask returned for
# the backward.
# real-sizes: 24=4096 13=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(None, dtype=DataType.Int)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    T2 = fd.define_tensor(shape=[13, 2, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[13, 2, 24], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    S5 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S6 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T11 = fd.ops.uniform(S5, S6, shape=[13, 2, 24], rng_seed=S0, rng_offset=S1, dtype=DataType.Float)
    S12 = fd.define_scalar(0.90000, dtype=DataType.Double)
    T13 = fd.ops.lt(T11, S12)
    T18 = fd.ops.broadcast_in_dim(T3, shape=[13, 2, 24], broadcast_dims=[2])
    T19 = fd.ops.cast(T2, dtype=DataType.Float)
    T20 = fd.ops.cast(T18, dtype=DataType.Float)
    T21 = fd.ops.add(T19, T20)
    T22 = fd.ops.cast(T13, dtype=DataType.Float)
    T23 = fd.ops.mul(T21, T22)
    S24 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T25 = fd.ops.mul(T23, S24)
    T26 = fd.ops.cast(T4, dtype=DataType.Float)
    T27 = fd.ops.add(T26, T25)
    T28 = fd.ops.cast(T27, dtype=DataType.BFloat16)
    fd.add_output(T28)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    2024,
    4,
    torch.testing.make_tensor((13, 2, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((24,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 2, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
