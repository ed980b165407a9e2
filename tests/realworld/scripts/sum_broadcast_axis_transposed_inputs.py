# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1659 (the transpose scheduler merged an iteration and
# a reduction axis, 2024): two inputs with a size-1 dim in different places, each
# summed over a dim (one of them the other's broadcast), multiplied so the results
# meet with transposed layouts; inputs given by as_strided with size-1 strides.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.sum(T0, axes=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.sum(T1, axes=[1], keepdim=False, dtype=DataType.Null)
    T4 = fd.ops.mul(T2, T3)
    T5 = fd.ops.sum(T1, axes=[2], keepdim=True, dtype=DataType.Null)
    T6 = fd.ops.add(T0, T5)
    fd.add_output(T4)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((1088,), dtype=torch.float32, device='cuda:0').as_strided((32, 34, 1), (34, 1, 1)),
    torch.randn((1088,), dtype=torch.float32, device='cuda:0').as_strided((32, 1, 34), (34, 34, 1)),
]
fd.execute(inputs)
