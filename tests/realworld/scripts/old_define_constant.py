# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on 2022-2023 frontend repros (pytorch/pytorch nvfuser python_frontend tests):
# define_constant for literals and define_scalar(DataType.X) positional for scalar inputs.
import torch
from nvfuser import FusionDefinition, DataType

fd = FusionDefinition()
with fd:
    t0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    s0 = fd.define_scalar(DataType.Double)
    c0 = fd.define_constant(3.0)
    c1 = fd.define_constant(2, DataType.Int)
    t1 = fd.ops.mul(t0, s0)
    t2 = fd.ops.add(t1, c0)
    t3 = fd.ops.pow(t2, c1)
    fd.add_output(t3)

inputs = [torch.randn(3, 5, device='cuda'), 2.0]
out = fd.execute(inputs)
