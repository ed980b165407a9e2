# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/opinfo input generators for gather,
# take_along_axis and index_select: gather with an index tensor smaller than the input
# on every axis, take_along_axis with a broadcast index, index_select on dim 1 with an
# Int32 index.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id14(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, is_cpu=False)
    T3 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.Int, is_cpu=False)
    T4 = fd.ops.gather(T0, T1, 1)
    T5 = fd.ops.index_select(T0, T2, 1)
    T6 = fd.ops.take_along_axis(T0, T3, 0)
    T7 = fd.ops.mul(T5, T5)
    fd.add_output(T4)
    fd.add_output(T7)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id14(fd)

inputs = [
    torch.randn((10, 16), dtype=torch.float32, device='cuda:0'),
    torch.randint(0, 16, (7, 5), dtype=torch.int64, device='cuda:0'),
    torch.randint(0, 16, (9,), dtype=torch.int32, device='cuda:0'),
    torch.randint(0, 10, (1, 16), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
