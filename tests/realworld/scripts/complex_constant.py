# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py complex tests: a complex constant
# written complex(re, im), as nvFuser prints it, added to a ComplexFloat product.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.ComplexFloat)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.ComplexFloat)
    T2 = fd.ops.mul(T0, T1)
    S3 = fd.define_scalar(complex(1.0, -2.0), dtype=DataType.ComplexDouble)
    T4 = fd.ops.add(T2, S3)
    T5 = fd.ops.abs(T4)
    fd.add_output(T4)
    fd.add_output(T5)

inputs = [
    torch.randn((4, 6), dtype=torch.complex64, device='cuda'),
    torch.randn((4, 6), dtype=torch.complex64, device='cuda'),
]
fd.execute(inputs)
