# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2395 (test_repro.py test_issue2395): a bool mask with a
# stride-0 last axis, a 2-D bool mask re-bound to the same name by broadcast_in_dim,
# two where()s with a Double zero, and a slice of the values as a second output.
import torch
from nvfuser import FusionDefinition, DataType


def create_fusion(fd : FusionDefinition) -> None :
    cond0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, None], dtype=DataType.Bool, is_cpu=False, stride_order=[2, 1, 0])
    values = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    cond1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[1, 0])
    cond1 = fd.ops.broadcast_in_dim(cond1, shape=[4, 6, 8], broadcast_dims=[0, 1])
    sliced = fd.ops.slice(values, start_indices=[0, 0, 4], end_indices=[4, 6, 8], strides=[1, 1, 1])
    zero = fd.define_scalar(0.00000, dtype=DataType.Double)
    masked = fd.ops.where(cond1, zero, values)
    masked = fd.ops.where(cond0, zero, masked)
    fd.add_output(sliced)
    fd.add_output(masked)


with FusionDefinition() as fd:
    create_fusion(fd)

inputs = [
    torch.randint(0, 2, (24,), dtype=torch.bool, device='cuda:0').as_strided((4, 6, 8), (6, 1, 0)),
    torch.randn((192,), dtype=torch.float32, device='cuda:0').as_strided((4, 6, 8), (48, 8, 1)),
    torch.randint(0, 2, (24,), dtype=torch.bool, device='cuda:0').as_strided((4, 6), (6, 1)),
]
fd.execute(inputs)
