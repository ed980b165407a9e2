# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2755 (test_repro.py test_issue2755): define_tensor with
# only shape=[-1] (dtype and contiguity left at their defaults), and two slices given
# without strides, each followed by a neg.
import torch
from nvfuser import FusionDefinition, DataType


def fusion_func(fd: FusionDefinition) -> None:
    t0 = fd.define_tensor(shape=[-1])
    t1 = fd.ops.slice(t0, start_indices=[0], end_indices=[5])
    t2 = fd.ops.neg(t1)
    t3 = fd.ops.slice(t2, start_indices=[0], end_indices=[2])
    t4 = fd.ops.neg(t3)
    fd.add_output(t4)


with FusionDefinition() as fd:
    fusion_func(fd)

inputs = [torch.randn((10,), dtype=torch.float32, device="cuda:0")]
fd.execute(inputs)
