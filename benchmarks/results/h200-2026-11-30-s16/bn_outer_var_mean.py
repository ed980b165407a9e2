# ruff: noqa  (a repro script in nvFuser's format: BatchNorm1d's statistics alone, var_mean over dim 0)
# real-sizes: 40=8192 24=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T5, T6 = fd.ops.var_mean(T0, dims=[0], correction=0, keepdim=False)
    fd.add_output(T5)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((40, 24), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
