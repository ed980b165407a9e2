# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# The smallest inner-outer fusion whose outer reduction reads the inner reduction's
# result: the row mean (sum, div, broadcast) subtracted from the input, then summed over
# the rows. It was taken by the inner-outer persistent scheduler and then failed to lower
# ("axis ... cannot be indexed from the loop nest").
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.sum(T0, dims=[1], keepdim=True, dtype=DataType.Null)
    S2 = fd.ops.size(T0, dim=1)
    T3 = fd.ops.div(T1, S2)
    T4 = fd.ops.sub(T0, T3)
    T5 = fd.ops.sum(T4, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T4)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((64, 96), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
