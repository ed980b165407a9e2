# Found by tests/fuzz (fusion-2-5647, seed 2): T0[100 (stride 0), 1, 2] is expanded to [1, 100, 2, 2]
# and added to itself. Same cause as fusion-1-874: the input cache was promoted from a consumer whose
# promotion was not known yet, predicated to 200 of the 400 iterations, and every thread past them
# stored an unset value over an element of both outputs (400 of 400 wrong).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[None, None, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.broadcast_in_dim(T0, shape=[1, 100, 2, 2], broadcast_dims=[1, 2, 3])
    T2 = fd.ops.add(T1, T0)
    fd.add_output(T2)
    fd.add_output(T1)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(2, dtype=torch.float32, device='cuda:0').as_strided((100, 1, 2), (0, 2, 1)),
]
fd.execute(inputs)
