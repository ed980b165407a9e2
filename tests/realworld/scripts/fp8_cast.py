# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser fp8 cast tests (test_python_frontend.py): cast float to
# Float8_e4m3fn and e5m2 and back, a scale multiplied in.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    S1 = fd.define_scalar(4.0, dtype=DataType.Double)
    T2 = fd.ops.mul(T0, S1)
    T3 = fd.ops.cast(T2, dtype=DataType.Float8_e4m3fn)
    T4 = fd.ops.cast(T2, dtype=DataType.Float8_e5m2)
    T5 = fd.ops.cast(T3, dtype=DataType.Float)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)

inputs = [torch.randn((8, 16), dtype=torch.float32, device='cuda')]
fd.execute(inputs)
