# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/opinfo reduction opinfos and
# test_python_frontend.py reduction tests: min, prod and mean with keepdim and a dtype=,
# negative dims, an Int64 sum of an Int32 input, and amax over all axes.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id5(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int32, is_cpu=False)
    T2 = fd.ops.min(T0, dims=[-1], keepdim=True, dtype=DataType.Null)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    S4 = fd.define_scalar(0.5, dtype=DataType.Double)
    T5 = fd.ops.mul(T3, S4)
    T6 = fd.ops.exp(T5)
    T7 = fd.ops.prod(T6, dims=[1], keepdim=False, dtype=DataType.Float)
    T8 = fd.ops.mean(T3, dims=[0, 2], keepdim=True)
    T9 = fd.ops.sub(T3, T8)
    T10 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Int)
    T11 = fd.ops.max(T9, dims=[0, 1, 2], keepdim=False)
    fd.add_output(T2)
    fd.add_output(T7)
    fd.add_output(T9)
    fd.add_output(T10)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id5(fd)

inputs = [
    torch.randn((4, 6, 24), dtype=torch.float16, device='cuda:0'),
    torch.randint(-100, 100, (10, 12), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
