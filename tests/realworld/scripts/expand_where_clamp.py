# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder masked-fill / clamp fusions: broadcast_in_dim then expand, lt,
# where with a scalar, clamp with scalar bounds, bool mask input.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False)
    T2 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.ops.expand(T2, shape=[6, 10])
    S4 = fd.define_scalar(float('-inf'), dtype=DataType.Double)
    T5 = fd.ops.where(T1, S4, T0)
    T6 = fd.ops.add(T5, T3)
    S7 = fd.define_scalar(-2.0, dtype=DataType.Double)
    S8 = fd.define_scalar(2.0, dtype=DataType.Double)
    T9 = fd.ops.clamp(T6, S7, S8)
    T10 = fd.ops.lt(T0, T3)
    fd.add_output(T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.randn((6, 10), dtype=torch.float32, device='cuda:0'),
    torch.randint(0, 2, (6, 10), dtype=torch.bool, device='cuda:0'),
    torch.randn((1, 10), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
