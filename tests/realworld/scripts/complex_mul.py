# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py complex tests: ComplexFloat inputs,
# mul, add and abs to a real result.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.ComplexFloat)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.ComplexFloat)
    T2 = fd.ops.mul(T0, T1)
    T4 = fd.ops.add(T2, T0)
    T5 = fd.ops.abs(T4)
    fd.add_output(T4)
    fd.add_output(T5)

inputs = [
    torch.randn((4, 6), dtype=torch.complex64, device='cuda'),
    torch.randn((4, 6), dtype=torch.complex64, device='cuda'),
]
fd.execute(inputs)
