# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1306 (late 2023): the same cast written twice into two
# variables (common subexpressions a Thunder trace did not merge), reductions over the
# leading two axes and over the last axis with the old axes= keyword, and the input given
# as torch.randn(numel).as_strided(...), as nvFuser's repro printer wrote it then.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T3 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    T14 = fd.ops.cast(T3, dtype=DataType.Float)
    T15 = fd.ops.cast(T3, dtype=DataType.Float)
    T16 = fd.ops.sum(T15, axes=[0, 1], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.sum(T14, axes=[0, 1], keepdim=False, dtype=DataType.Null)
    T31 = fd.ops.sum(T14, axes=[2], keepdim=False, dtype=DataType.Null)
    fd.add_output(T16)
    fd.add_output(T20)
    fd.add_output(T31)

with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn((1536,), dtype=torch.bfloat16, device='cuda:0').as_strided((4, 8, 48), (384, 48, 1)),
]
fd.execute(inputs)
