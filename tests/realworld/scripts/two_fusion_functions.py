# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on pasted repros holding more than one fusion function, only one of them run
# (NVIDIA/Fuser issues comparing a failing and a working variant).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    fd.add_output(T1)


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [torch.randn((9, 5), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
