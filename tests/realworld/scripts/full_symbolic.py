# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser#720: ops.full with a runtime scalar size
# (define_scalar(dtype=DataType.Int) is a scalar input), added to a tensor input.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(
        shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False
    )
    S1 = fd.define_scalar(dtype=DataType.Int)
    T3 = fd.ops.full(fill_value=1.0, shape=[S1], dtype=DataType.Float)
    T4 = fd.ops.add(T0, T3)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [torch.randn((100,), device="cuda:0"), 100]
fd.execute(inputs)
