# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issues about strided slices (x[:, ::2]): slice with a stride of
# 2, which nvFuser did not support for a long time.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.slice(T0, start_indices=[0, 0], end_indices=[4, 8], strides=[1, 2])
    fd.add_output(T1)

inputs = [torch.randn((4, 8), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
