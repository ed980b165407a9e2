# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py scatter tests: fd.ops.scatter(input,
# index, src, dim).
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T3 = fd.ops.scatter(T0, T1, T2, 0)
    fd.add_output(T3)

inputs = [
    torch.randn((4, 6), device='cuda'),
    torch.randint(0, 4, (2, 6), device='cuda'),
    torch.randn((2, 6), device='cuda'),
]
fd.execute(inputs)
