# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2664 example 4 (test_repro.py test_issue2664_repro4):
# an input with a size-1 (broadcast) last axis used both in an add that expands it and in
# a neg written back into that same input with fd.add_output(T4, T0).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.add(T1, T0)
    T4 = fd.ops.neg(T0)
    fd.add_output(T3)
    fd.add_output(T4, T0)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((256, 1), dtype=torch.float32, device='cuda:0'),
    torch.randn((256, 16), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
