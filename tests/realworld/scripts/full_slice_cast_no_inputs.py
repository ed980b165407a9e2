# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1872 (test_repro.py test_issue1872): a fusion with no
# inputs at all: full(shape=[S]) of ones, two slices of it (without manual_normalization)
# each cast to half as an output.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S1 = fd.define_scalar(5, dtype=DataType.Int)
    T3 = fd.ops.full(shape=[S1], fill_value=S0, dtype=DataType.Float)
    T4 = fd.ops.slice(T3, start_indices=[0], end_indices=[2], strides=[1])
    T5 = fd.ops.cast(T4, dtype=DataType.Half)
    T6 = fd.ops.slice(T3, start_indices=[2], end_indices=[5], strides=[1])
    T7 = fd.ops.cast(T6, dtype=DataType.Half)
    fd.add_output(T5)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = []
fd.execute(inputs)
