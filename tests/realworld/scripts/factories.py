# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py full/zeros/ones tests (2024 frontend:
# shape= keyword, fill_value, dtype) mixed with an input.
import torch
from nvfuser import FusionDefinition, DataType


def fusion_func(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
    T1 = fd.ops.full(shape=[3, 4], fill_value=2.5, dtype=DataType.Float)
    T2 = fd.ops.zeros(shape=[3, 4], dtype=DataType.Float)
    T3 = fd.ops.ones(shape=[3, 4], dtype=DataType.Half)
    T4 = fd.ops.add(T0, T3)
    T5 = fd.ops.mul(T1, T4)
    T6 = fd.ops.sub(T5, T2)
    fd.add_output(T6)


with FusionDefinition() as fd:
    fusion_func(fd)

inputs = [torch.randn((3, 4), dtype=torch.float16, device='cuda')]
fd.execute(inputs)
