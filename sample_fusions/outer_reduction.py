# An outer (column) reduction: the sum over the outer axis of a bf16 [rows, cols] tensor,
# accumulated in float, as in a bias gradient.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    T2 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.cast(T2, dtype=DataType.BFloat16)
    fd.add_output(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1024, 64), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
