# Seed 001 (nvFuser PR #4723): an inner-outer persistent fusion whose input has a
# permuted allocation domain, (iS1, bS0, iS2), contiguity "t n t".
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 4096, 4096], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 2, 0])
    T1 = fd.ops.squeeze(T0, dims=[0])
    T2 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.broadcast(T2, is_broadcast_dim=[True, False, True])
    T4 = fd.ops.add(T0, T3)
    T5 = fd.ops.squeeze(T4, dims=[0])
    T6 = fd.ops.sum(T5, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T4)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(16777216, dtype=torch.float32, device='cuda:0').as_strided((1, 4096, 4096), (4096, 4096, 1)),
]
fd.execute(inputs)
