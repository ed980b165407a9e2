# Found by tests/fuzz (fusion-12-1652, on the GPU machine): the cat's resize segment failed to
# lower, so every op was segmented apart and the cat of T0 and -T0 ran in a segment without its
# pads. Their Resize definitions are cut away there, and the cat took each padded input as
# holding the whole axis: the second half of T4 came out as zeros. A CatOp now records the
# region each input holds (spans) when it is built.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.sum(T0, dims=[0], keepdim=True)
    T2 = fd.ops.reshape(T1, [1, 1])
    T3 = fd.ops.neg(T0)
    T4 = fd.ops.cat([T0, T3], dim=0)
    T5 = fd.ops.neg(T4)
    T6 = fd.ops.segment_set(T2)
    S7 = fd.define_scalar(dtype=DataType.Double)
    T8 = fd.ops.add(T6, S7)
    T9 = fd.ops.add(T4, T8)
    fd.add_output(T9)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2,), dtype=torch.float32, device='cuda:0'),
    0.75,
]
fd.execute(inputs)
