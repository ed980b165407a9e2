# Found by tests/fuzz (fusion-12-650, on the GPU machine): T1 [17, b1, 17] is summed over its
# last axis (T4 keeps the broadcast) and, through T7, added to T3 [17, 3, 17], which promotes
# the merged loop to 17 * 3 positions. The sum's write-back took its rows as the raw loop
# position (p < 17) while its producer read row p / 3: 11 of 17 sums were wrong. The write-back
# now indexes and predicates through the promoted loop (loop_seeded_index), as the rest do.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, 17], contiguity=[True, True, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Half, stride_order=None)
    T2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, None, True], dtype=DataType.Float, stride_order=None)
    T3 = fd.ops.neg(T2)
    T4 = fd.ops.sum(T1, dims=[2], keepdim=False)
    T5 = fd.ops.iota(17, 0, 1, DataType.Int)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[17, 1, 17], broadcast_dims=[2])
    T7 = fd.ops.mul(T1, T6)
    T8 = fd.ops.add(T3, T7)
    T9 = fd.ops.neg(T8)
    fd.add_output(T9)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T7)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((17, 3, 17), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((17, 1, 17), dtype=torch.float16, device='cuda:0'),
    torch.randn(17, dtype=torch.float32, device='cuda:0').as_strided((17, 3, 17), (0, 0, 1)),
]
fd.execute(inputs)
