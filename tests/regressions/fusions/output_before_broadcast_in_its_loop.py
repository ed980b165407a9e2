# Found by tests/fuzz (fusion-1-28): outputs before a broadcast, computed in the loop of the
# broadcast output, were written at the loop's index (their split ids have the loop's extents but
# split a smaller id); their indices now come from the inlined producer's.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, stride_order=None)
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.neg(T1)
    T3 = fd.ops.broadcast_in_dim(T2, shape=[8, 2], broadcast_dims=[0])
    fd.add_output(T3)
    fd.add_output(T1)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8,), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
