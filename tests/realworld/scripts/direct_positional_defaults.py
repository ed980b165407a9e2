# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #5373 (nvfuser_direct, late 2025): a fusion written
# directly in the `with` block, define_tensor with a positional shape and no dtype (Float
# by default) or contiguity, define_scalar(3.0) without a dtype, sum with positional
# dims/keepdim/dtype, inputs made by torch.ones(...) bound to names and passed as
# fd.execute([input1, input2])[0]; a commented-out line calling an API that does not exist.
import torch
from nvfuser_direct import FusionDefinition, DataType

with FusionDefinition() as fd :
    t0 = fd.define_tensor(shape=[-1, 1, -1],
                          contiguity=[True, None, True],
                          dtype=DataType.Float)
    t1 = fd.define_tensor([-1, -1, -1])
    c0 = fd.define_scalar(3.0)

    t2 = fd.ops.add(t0, t1)
    t3 = fd.ops.mul(t2, c0)
    t4 = fd.ops.sum(t3, [-1], False, DataType.Float)
    t5 = fd.ops.max(t3, [0, 2], True, DataType.Float)

    fd.add_output(t4)
    fd.add_output(t5)

input1 = torch.randn(2, 1, 8, device='cuda')
input2 = torch.randn(2, 4, 8, device='cuda')

nvf_out = fd.execute([input1, input2])[0]
# torch_out = fd.execute_torch([input1, input2])[0]
