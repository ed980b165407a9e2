# Softmax over the last axis, the numerically stable way: exp(x - max) / sum(exp(x - max)).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T2 = fd.ops.broadcast_in_dim(T1, shape=[16, 1000], broadcast_dims=[0])
    T3 = fd.ops.sub(T0, T2)
    T4 = fd.ops.exp(T3)
    T5 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[16, 1000], broadcast_dims=[0])
    T7 = fd.ops.div(T4, T6)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 1000), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
