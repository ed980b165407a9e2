# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py slice tests: slice with and without
# strides=, start_indices=/end_indices= keywords.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.slice(T0, start_indices=[1, 2], end_indices=[5, 10], strides=[1, 1])
    T2 = fd.ops.slice(T0, [0, 0], [3, 4])
    T3 = fd.ops.exp(T1)
    fd.add_output(T3)
    fd.add_output(T2)

inputs = [torch.randn((6, 12), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
