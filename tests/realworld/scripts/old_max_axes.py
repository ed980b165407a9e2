# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on early-2023 nvFuser repros (NVIDIA/Fuser issues): reductions spelled with
# axes= and dtype=DataType.Null, define_tensor(symbolic_sizes=..., contiguity=bools).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.max(T0, axes=[1], keepdim=False, dtype=DataType.Null)
    T2 = fd.ops.sum(T0, axes=[0], keepdim=True, dtype=DataType.Null)
    fd.add_output(T1)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((6, 37), dtype=torch.float32, device="cuda:0"),
]
fd.execute(inputs)
