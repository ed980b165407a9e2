# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py index_select / gather /
# take_along_axis tests: integer index tensors made with torch.randint.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
    T3 = fd.ops.index_select(T0, T1, dim=0)
    T4 = fd.ops.gather(T0, T2, dim=1)
    T5 = fd.ops.take_along_axis(T0, T2, 1)
    T6 = fd.ops.add(T4, T5)
    fd.add_output(T3)
    fd.add_output(T6)

inputs = [
    torch.randn((10, 7), device='cuda'),
    torch.randint(0, 10, (5,), device='cuda'),
    torch.randint(0, 7, (10, 7), device='cuda'),
]
fd.execute(inputs)
