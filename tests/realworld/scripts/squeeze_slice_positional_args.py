# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3192 (test_repro.py test_issue3192): define_tensor with
# the shape positional and contiguity=True, squeeze of two leading size-1 axes with the
# dims positional, and a slice with start and end indices positional.
import torch
from nvfuser import FusionDefinition, DataType


def fusion_func(fd: FusionDefinition):
    inp = fd.define_tensor([1, 1, 2], contiguity=True)
    out = fd.ops.squeeze(inp, [0, 1])
    out = fd.ops.slice(out, [1], [2])
    fd.add_output(out)


with FusionDefinition() as fd:
    fusion_func(fd)

in_tensor = torch.randn(1, 1, 2, device="cuda")
inputs = [in_tensor]
fd.execute(inputs)
