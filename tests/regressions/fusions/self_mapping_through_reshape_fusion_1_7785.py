# Found by tests/fuzz (fusion-1-7785, long campaign seed 1): where(T1 > -1.5, T0, T1) over T0[3, 3, 1]
# and T1 = T0.reshape(9) gives T4[3, 3, 9]; T4's axes 0, 1 are T0's and its axis 2 is their merge
# through the reshape. The cached load of T0 was shared by both readers and read at one element
# per thread (most elements wrong). Schedulers now refuse self mapping through a reshape and the
# segmenter splits the fusion. Shrunk by hand from the bfloat16 [8, 8, 1] case (its saved shrink,
# with T0 > 3.25, passes with most random inputs).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[False, None, None], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.reshape(T0, [9])
    S2 = fd.define_scalar(-1.5, dtype=DataType.Double)
    T3 = fd.ops.gt(T1, S2)
    T4 = fd.ops.where(T3, T0, T1)
    fd.add_output(T4)
    fd.add_output(T1)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(5, dtype=torch.float32, device='cuda:0').as_strided((3, 3, 1), (2, 0, 1)),
]
fd.execute(inputs)
