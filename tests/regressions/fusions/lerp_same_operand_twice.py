# Found by tests/fuzz (fusion-0-16): compile crashed with "ValueError: T0 is not an input of
# <TernaryOp>": an op reading one tensor twice (lerp(a, a, w)) is listed twice in its uses, and
# the pointwise scheduler's cache_after rewired it twice.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.lerp(T0, T0, 0.25)
    fd.add_output(T1)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
