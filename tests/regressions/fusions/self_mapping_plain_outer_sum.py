# x + x[:, None] (the plainest self mapping): the cached x was read at the outer position for both
# operands (42 of 49 wrong); now the segmenter splits it.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.broadcast_in_dim(T0, shape=[7, 1], broadcast_dims=[0])
    T2 = fd.ops.add(T0, T1)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((7,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
