# Found by tests/fuzz (fusion-7-33): the pad's 'inside' test was (thread index - left) >= 0 in
# unsigned arithmetic, always true: the kernel read before the input (SIGSEGV). It now tests the
# consumer's index against the unpadded range.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, None], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[None, None, True], dtype=DataType.Int32, stride_order=None)
    T2 = fd.ops.pad(T1, [1, 0], 1)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(1, dtype=torch.float32, device='cuda:0').as_strided((3, 3), (0, 0)),
    torch.testing.make_tensor((3,), dtype=torch.int32, device='cuda:0').as_strided((5, 1, 3), (0, 3, 1)),
]
fd.execute(inputs)
