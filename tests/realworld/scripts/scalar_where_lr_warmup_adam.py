# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of an optimizer step with a symbolic step count (NumberProxy
# inputs): the warmup factor where(step < warmup, step / warmup, 1.0) and a clamped learning
# rate are scalar-only fd.ops.where / fd.ops.clamp (nvFuser binds where, clamp and lerp on
# scalars too), and they scale a pointwise SGD-with-momentum update.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S3 = fd.define_scalar(None, dtype=DataType.Int)
    S4 = fd.define_scalar(None, dtype=DataType.Double)
    S5 = fd.define_scalar(100, dtype=DataType.Int)
    S6 = fd.ops.lt(S3, S5)
    S7 = fd.ops.cast(S3, dtype=DataType.Double)
    S8 = fd.define_scalar(100.0, dtype=DataType.Double)
    S9 = fd.ops.div(S7, S8)
    S10 = fd.define_scalar(1.0, dtype=DataType.Double)
    S11 = fd.ops.where(S6, S9, S10)
    S12 = fd.ops.mul(S4, S11)
    S13 = fd.define_scalar(1e-05, dtype=DataType.Double)
    S14 = fd.define_scalar(0.01, dtype=DataType.Double)
    S15 = fd.ops.clamp(S12, S13, S14)
    S16 = fd.define_scalar(0.9, dtype=DataType.Double)
    T17 = fd.ops.mul(T2, S16)
    T18 = fd.ops.add(T17, T1)
    T19 = fd.ops.mul(T18, S15)
    T20 = fd.ops.sub(T0, T19)
    fd.add_output(T20, T0)
    fd.add_output(T18, T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((32, 48), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((32, 48), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((32, 48), dtype=torch.float32, device='cuda:0'),
    37,
    0.02,
]
fd.execute(inputs)
