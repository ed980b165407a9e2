# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_matmul.py / test_linear in python tests: fd.ops.matmul
# and fd.ops.linear with a bias, bf16 inputs.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False)
    T3 = fd.ops.linear(T0, T1, T2)
    T4 = fd.ops.matmul(T0, fd.ops.permute(T1, dims=[1, 0]))
    fd.add_output(T3)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((12, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((12,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
