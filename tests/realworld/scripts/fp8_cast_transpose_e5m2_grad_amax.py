# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Transformer Engine's fused cast_transpose for fp8 gradients (the e5m2 copy of
# a bf16 grad and its transpose, both needed by the backward GEMMs, plus the amax for the
# next scale) as Thunder hands the fusion to nvFuser (cf. NVIDIA/Fuser
# benchmarks/python/test_transpose.py for the transpose side): grad [M, N] times the [1]
# scale, clamped to +-57344 and cast to Float8_e5m2, the fp8 tensor permuted to [N, M] as a
# second (materialized) output, and max(abs(grad)) as a 0-dim float.
# real-sizes: 24=4096 13=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.broadcast_in_dim(T1, shape=[13, 24], broadcast_dims=[1])
    S7 = fd.define_scalar(57344.000, dtype=DataType.Double)
    S8 = fd.define_scalar(-57344.000, dtype=DataType.Double)
    T9 = fd.ops.mul(T2, T6)
    T10 = fd.ops.clamp(T9, S8, S7)
    T11 = fd.ops.cast(T10, dtype=DataType.Float8_e5m2)
    T12 = fd.ops.permute(T11, dims=[1, 0])
    T13 = fd.ops.abs(T2)
    T14 = fd.ops.max(T13, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T11)
    fd.add_output(T12)
    fd.add_output(T14)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
]
fd.execute(inputs)
