# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py random tests
# (test_random_distinct_values, test_uniform/normal with rng_seed and rng_offset):
# fd.ops.normal with a symbolic shape from another tensor and runtime seed/offset, a
# constant-seeded normal, and randn_like, combined pointwise.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id17(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(0.0, dtype=DataType.Double)
    S4 = fd.define_scalar(2.0, dtype=DataType.Double)
    V5 = T0.shape()
    T6 = fd.ops.normal(S3, S4, V5, rng_seed=S1, rng_offset=S2, dtype=DataType.Float)
    S7 = fd.define_scalar(42, dtype=DataType.Int)
    S8 = fd.define_scalar(8, dtype=DataType.Int)
    T9 = fd.ops.normal(S3, S4, [12, 40], rng_seed=S7, rng_offset=S8, dtype=DataType.Double)
    T10 = fd.ops.randn_like(T0)
    T11 = fd.ops.add(T0, T6)
    T12 = fd.ops.mul(T11, T9)
    T13 = fd.ops.cast(T12, dtype=DataType.Float)
    fd.add_output(T13)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id17(fd)

inputs = [
    torch.randn((12, 40), dtype=torch.float32, device='cuda:0'),
    2024,
    4,
]
fd.execute(inputs)
