# Found by tests/fuzz (fusion-1-943): x[:, None] broadcast to [7, 7] plus x again (same axis at both
# positions of T7) with a pad beside it: self mapping, refused by the schedulers, split by the segmenter.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[7], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.broadcast_in_dim(T0, shape=[7, 7], broadcast_dims=[0])
    T2 = fd.ops.zeros([7, 7], DataType.Float)
    T3 = fd.ops.add(T1, T2)
    T4 = fd.ops.neg(T1)
    T5 = fd.ops.permute(T4, dims=[0, 1])
    T6 = fd.ops.pad(T5, [1, 0], 0.5)
    T7 = fd.ops.add(T0, T4)
    fd.add_output(T7)
    fd.add_output(T1)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((7,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
