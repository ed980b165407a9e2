# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on pytorch/pytorch#76790: define_tensor(sizes=, strides=) taking an input's
# size and stride (size-1 axes become broadcasts), then broadcast_in_dim.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    t0 = fd.define_tensor(sizes=[1, 1, 4], strides=[4, 4, 1], dtype=DataType.Float)
    t1 = fd.define_tensor(sizes=[2, 3, 4], strides=[12, 4, 1])
    t0_b = fd.ops.broadcast_in_dim(t0, [2, 3, 4], [0, 1, 2])
    t2 = fd.ops.add(t0_b, t1)
    fd.add_output(t2)

input1 = torch.ones(1, 1, 4, device='cuda')
input2 = torch.ones(2, 3, 4, device='cuda')
fd.execute([input1, input2])
