# Found by tests/fuzz (fusion-1-8405): tensors before an outer broadcast (vectorized by 2, split
# by 128) in the loop of the expanded output ([2 ex, 31] after its split by 2: merged, then split
# by 128) were indexed by the loop variables: both splits start from 62 elements, which the
# lowering took for the same axis, and the consumer's merge with the broadcast gave no index for
# them; threads past the 31st, their loads predicated off, wrote the expanded output with
# unset values (engine/lower/index.py: split_chain, producer_known; loop_index.py: forwarded).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, stride_order=None)
    T1 = fd.ops.slice(T0, start_indices=[0], end_indices=[62])
    T2 = fd.ops.sign(T1)
    T3 = fd.ops.add(T2, T1)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[2, 62], broadcast_dims=[1])
    fd.add_output(T4)
    fd.add_output(T2)
    fd.add_output(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
