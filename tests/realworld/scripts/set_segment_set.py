# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser python tests using fd.ops.set and fd.ops.segment_set to copy
# and to force a segment boundary.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.set(T0)
    T2 = fd.ops.mul(T1, T1)
    T3 = fd.ops.segment_set(T2)
    T4 = fd.ops.sum(T3, dims=[1], keepdim=False)
    fd.add_output(T1)
    fd.add_output(T4)

inputs = [torch.randn((6, 20), device='cuda')]
fd.execute(inputs)
