# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the 2023 python_bindings.cpp unary rand_like binding and repros using it.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.rand_like(T0)
    T2 = fd.ops.add(T0, T1)
    fd.add_output(T2)

inputs = [torch.randn((4, 8), device='cuda')]
fd.execute(inputs)
