# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2532 (test_repro.py test_issue2532): a batched matmul
# whose contraction axis is a broadcast (K = 1) on both sides, the first operand in
# stride_order=[2, 0, 1] (its K axis outermost), summed over the batch; and a sum of
# the second operand over its batch and broadcast axes.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 0, 1])
    T1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.ops.sum(T1, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.matmul(T0, T1)
    T4 = fd.ops.sum(T3, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T2)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((2 * 32,), dtype=torch.float32, device='cuda:0').as_strided((2, 32, 1), (32, 1, 32)),
    torch.randn((2 * 16,), dtype=torch.float32, device='cuda:0').as_strided((2, 1, 16), (16, 16, 1)),
]
fd.execute(inputs)
