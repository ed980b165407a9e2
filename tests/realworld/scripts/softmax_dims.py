# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder softmax fusions (2024 frontend): reductions with dims= and keepdim,
# broadcast_in_dim(shape=...), half input cast up and down.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.max(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.broadcast_in_dim(T2, shape=[4, 50], broadcast_dims=[0])
    T4 = fd.ops.sub(T1, T3)
    T5 = fd.ops.exp(T4)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=True, dtype=DataType.Null)
    T7 = fd.ops.div(T5, T6)
    T8 = fd.ops.cast(T7, dtype=DataType.Half)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.testing.make_tensor((4, 50), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
