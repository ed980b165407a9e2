# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on tests/python/test_python_frontend.py (NVIDIA/Fuser) var tests: var with an
# explicit correction, old axes= and new dims= spellings, keepdim both ways.
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    t1 = fd.ops.var(t0, axes=[1], correction=1, keepdim=True)
    t2 = fd.ops.var(t0, dims=[0], correction=0, keepdim=False)
    t3 = fd.ops.sub(t0, t1)
    fd.add_output(t3)
    fd.add_output(t2)

inputs = [torch.testing.make_tensor((5, 9), dtype=torch.float32, device='cuda')]
fd.execute(inputs)
