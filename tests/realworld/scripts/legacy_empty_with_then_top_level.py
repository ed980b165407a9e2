# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on 2022-2023 repros that open an empty definition block (`with fd: pass`) after
# `fd = FusionDefinition()` and write the definition below it at the top level, as the
# pytorch/pytorch nvFuser frontend examples of the time were often retyped. The top-level
# calls are read as the same fd's with block. A masked sum: where on a comparison, then a
# reduction over the last axis.
import torch
from nvfuser import FusionDefinition, DataType

fd = FusionDefinition()
with fd:
    pass
T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
c0 = fd.define_constant(0.0)
T1 = fd.ops.gt(T0, c0)
T2 = fd.ops.where(T1, T0, c0)
T3 = fd.ops.sum(T2, axes=[1], keepdim=False, dtype=DataType.Float)
fd.add_output(T3)

inputs = [torch.randn(7, 33, device='cuda')]
fd.execute(inputs)
