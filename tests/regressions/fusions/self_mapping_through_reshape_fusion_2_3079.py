# Found by tests/fuzz (fusion-2-3079, seed 2): T0[3, 3 (stride 0)] is reshaped to [1, 3, 3] (then to
# [1, 3, 1, 3]) and also read directly and broadcast to [1, 1, 3, 3]; their sum has axis 2 = T0's
# axis 0 and axes 1, 3 = T0's axes merged and split by the reshape. The cached load of T0 was shared
# by the reshape's reader and the direct reader, which need different elements at one loop iteration
# (12 of 27 wrong). Schedulers now refuse self mapping through a reshape (as nvFuser's "Fusion has
# self mapping" for x + x[:, None]) and the segmenter splits the fusion. Same cause: fusion-1-7785.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.reshape(T0, [1, 3, 3])
    T2 = fd.ops.set(T1)
    S3 = fd.define_scalar(0.5, dtype=DataType.Double)
    T4 = fd.ops.gt(T0, S3)
    S5 = fd.define_scalar(dtype=DataType.Double)
    T6 = fd.ops.where(T4, T0, S5)
    T7 = fd.ops.reshape(T2, [1, 3, 1, 3])
    T8 = fd.ops.add(T7, T6)
    T9 = fd.ops.neg(T8)
    fd.add_output(T9)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(3, dtype=torch.float32, device='cuda:0').as_strided((3, 3), (1, 0)),
    0.75,
]
fd.execute(inputs)
