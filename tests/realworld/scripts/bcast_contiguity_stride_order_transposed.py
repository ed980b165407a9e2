# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3225 (OpInfo tests of define_tensor, 2024): a [1, N]
# operand next to a [1, N] operand whose allocation is transposed (stride_order=[0, 1],
# contiguity=[True, None]: the size-1 dim is the inner one in memory and has no
# contiguity), added and multiplied; plus the same with a third input given by
# as_strided with a zero stride on its broadcast dim.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1, 6], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T2 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.add(T0, T1)
    T4 = fd.ops.mul(T2, T3)
    T5 = fd.ops.sum(T4, dims=[0], keepdim=True, dtype=DataType.Null)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 6), dtype=torch.float32, device='cuda:0'),
    torch.randn((6,), dtype=torch.float32, device='cuda:0').as_strided((1, 6), (1, 1)),
    torch.randn((5,), dtype=torch.float32, device='cuda:0').as_strided((5, 1), (1, 0)),
]
fd.execute(inputs)
