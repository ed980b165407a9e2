# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py iota / arange tests: iota(length,
# start, step, dtype) with scalar arguments and arange(start, end, step, dtype).
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
    S1 = fd.define_scalar(10, dtype=DataType.Int)
    S2 = fd.define_scalar(2, dtype=DataType.Int)
    S3 = fd.define_scalar(3, dtype=DataType.Int)
    T4 = fd.ops.iota(S1, S2, S3, dtype=DataType.Int)
    T5 = fd.ops.add(T0, T4)
    T6 = fd.ops.arange(1, 13, 3, dtype=DataType.Float)
    T7 = fd.ops.arange(5, dtype=DataType.Int)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T7)

inputs = [torch.randint(0, 100, (10,), device='cuda')]
fd.execute(inputs)
