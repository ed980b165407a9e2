# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on TorchScript/Thunder BatchNorm2d fusions: fd.ops.batch_norm in training with
# running statistics (updated in place), a relu after it.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    S5 = fd.define_scalar(0.100000, dtype=DataType.Double)
    S6 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T7, T8, T9 = fd.ops.batch_norm(T0, T1, T2, T3, T4, S5, S6, True)
    T10 = fd.ops.relu(T7)
    fd.add_output(T10)
    fd.add_output(T8)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((8, 16, 12, 12), dtype=torch.float32, device='cuda:0'),
    torch.randn((16,), dtype=torch.float32, device='cuda:0'),
    torch.randn((16,), dtype=torch.float32, device='cuda:0'),
    torch.randn((16,), dtype=torch.float32, device='cuda:0'),
    torch.ones((16,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
