# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder dropout fusions in NVIDIA/Fuser issues: fd.ops.uniform with runtime
# seed/offset scalars, lt against the keep probability, where and a scale.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S4 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T5 = fd.ops.uniform(S3, S4, shape=[4, 16], rng_seed=S1, rng_offset=S2, dtype=DataType.Float)
    S6 = fd.define_scalar(0.9, dtype=DataType.Double)
    T7 = fd.ops.lt(T5, S6)
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.mul(T0, T8)
    S10 = fd.define_scalar(1.1111111111111112, dtype=DataType.Double)
    T11 = fd.ops.mul(T9, S10)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn((4, 16), dtype=torch.float32, device='cuda:0'),
    1234,
    0,
]
fd.execute(inputs)
