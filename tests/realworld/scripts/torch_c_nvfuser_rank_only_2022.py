# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on pytorch/pytorch PR #76353 (the first python frontend, April 2022): tensors
# defined by rank alone, registered with fd.add_input, ops under fd.Ops, and the Fusion
# executed in a loop. That form lived a few months; the engine refuses it by name at
# the first define_tensor, pointing at the shape= spelling.
import torch
from torch._C._nvfuser import Fusion, FusionDefinition

fusion = Fusion()

with FusionDefinition(fusion) as fd :
    t0 = fd.define_tensor(3)
    t1 = fd.define_tensor(1)
    fd.add_input(t0)
    fd.add_input(t1)
    c0 = fd.define_constant(3.0)
    t1_b = fd.Ops.broadcast(t1, [True, True, False])
    t2 = fd.Ops.add(t0, t1_b)
    t3 = fd.Ops.mul(t2, c0)
    fd.add_output(t3)

input1 = torch.ones(2, 4, 8, device='cuda')
input2 = torch.ones(8, device='cuda')

for _ in range(5) :
    outputs = fusion.execute([input1, input2])
