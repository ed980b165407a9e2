# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on 2023 Thunder/nvFuser repros: reshape(T, original_shape=..., new_shape=...)
# (the frontend before dynamic reshape) and the older view() name.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.reshape(T0, original_shape=[4, 6], new_shape=[2, 2, 6])
    T2 = fd.ops.relu(T1)
    T3 = fd.ops.reshape(T2, [2, 2, 6], [24])
    fd.add_output(T2)
    fd.add_output(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [torch.randn((4, 6), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
