# Found by tests/fuzz (fusion-2026-296, also 122): a reduction vectorized by 4 over an input whose
# outer stride (193) is not a multiple of 4: every later row's vector load was misaligned (SIGSEGV at
# -O2 on the emulator, a misaligned address on a GPU). The vectorize factor now divides the outer strides.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[False, True, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.sum(T0, dims=[0, 1, 2], keepdim=True)
    fd.add_output(T1)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(385, dtype=torch.float32, device='cuda:0').as_strided((2, 3, 64), (193, 64, 1)),
]
fd.execute(inputs)
