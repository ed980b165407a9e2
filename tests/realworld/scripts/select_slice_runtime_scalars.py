# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py select and slice tests
# (test_select, test_slice_api with scalar start/stop, test_slice_dynamic): select with a
# runtime index, slice whose bounds are runtime Int scalars and fd.ops.size expressions.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id23(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    T3 = fd.ops.select(T0, S1, dim=0)
    S4 = fd.ops.size(T3, 1)
    S5 = fd.define_scalar(2, dtype=DataType.Int)
    S6 = fd.ops.sub(S4, S5)
    T7 = fd.ops.slice(T3, start_indices=[S2, 1], end_indices=[fd.ops.size(T3, 0), S6], strides=[1, 1])
    T8 = fd.ops.select(T0, 2, 2)
    T9 = fd.ops.sum(T7, dims=[1], keepdim=False, dtype=DataType.Float)
    fd.add_output(T9)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id23(fd)

inputs = [
    torch.randn((5, 9, 14), dtype=torch.float32, device='cuda:0'),
    3,
    2,
]
fd.execute(inputs)
