# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on channels-last repros (NVIDIA/Fuser issues on stride_order): a 4-D input
# with stride_order=[3, 0, 2, 1] made with as_strided, a broadcast bias and relu.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 0, 2, 1])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.broadcast_in_dim(T1, shape=[2, 3, 4, 5], broadcast_dims=[1])
    T3 = fd.ops.add(T0, T2)
    T4 = fd.ops.relu(T3)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((120,), dtype=torch.float32, device='cuda:0').as_strided((2, 3, 4, 5), (60, 1, 15, 3)),
    torch.randn((3,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
