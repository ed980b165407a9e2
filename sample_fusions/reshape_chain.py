# A chain of reshapes around pointwise ops and a permute: [8, 64, 32] -> [8, 2048]
# (+ bias) -> [8, 32, 64] -> permute -> [8, 64, 32] -> relu -> [16, 4, 256].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[8, 64, 32], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[2048], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.reshape(T0, new_shape=[8, 2048])
    T3 = fd.ops.broadcast_in_dim(T1, shape=[8, 2048], broadcast_dims=[1])
    T4 = fd.ops.add(T2, T3)
    T5 = fd.ops.reshape(T4, new_shape=[8, 32, 64])
    T6 = fd.ops.permute(T5, dims=[0, 2, 1])
    T7 = fd.ops.relu(T6)
    T8 = fd.ops.reshape(T7, new_shape=[16, 4, 256])
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8, 64, 32), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2048,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
