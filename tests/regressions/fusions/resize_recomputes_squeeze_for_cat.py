# Found by tests/fuzz (fusion-13-1375, on the GPU machine, refused): the squeeze T5 feeds both
# halves of a cat, under two different pads. The resize scheduler could not recompute a
# squeeze for one of them, so no scheduler took the segment; squeeze is recomputed now.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, stride_order=[0, 1])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Int32, stride_order=[0, 1])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, stride_order=[1, 0])
    T3 = fd.ops.abs(T1)
    T4 = fd.ops.broadcast_in_dim(T2, shape=[7, 3, 3, 1], broadcast_dims=[1, 2])
    T5 = fd.ops.squeeze(T4, [3])
    T6 = fd.ops.logical_not(T5)
    T7 = fd.ops.cat([T5, T6], dim=2)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(9, dtype=torch.float16, device='cuda:0').as_strided((3, 3), (1, 3)),
    torch.testing.make_tensor((11,), dtype=torch.int32, device='cuda:0').as_strided((3, 3), (1, 4)),
    torch.testing.make_tensor((3, 3), dtype=torch.bool, device='cuda:0'),
]
fd.execute(inputs)
