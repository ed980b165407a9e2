# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/opinfo topk/argsort input generators and
# test_python_frontend.py cumsum tests: topk of the smallest with sorted=True on dim 0,
# argsort descending and stable on the last dim, cumsum of the selected values.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id27(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(3, dtype=DataType.Int)
    T2, T3 = fd.ops.topk(T0, S1, dim=0, largest=False, sorted=True)
    T4 = fd.ops.argsort(T0, dim=-1, descending=True, stable=True)
    T5 = fd.ops.cumsum(T2, dim=1)
    T6 = fd.ops.take_along_axis(T0, T4, 1)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.add_output(T5)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id27(fd)

inputs = [
    torch.randn((11, 16), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
