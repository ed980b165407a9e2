# Found by tests/fuzz (schedule-42-163), mismatch: output 0: 32 of 32 differ (-0.0 != 3.77): T4's
# slice axis has one element and is bound to threadIdx.y of a block of 8, so thread 0 alone computes it,
# while T5 (not parallelized) read it in every thread and stored the other threads' unset copies.
# expect refused: reads T4 (local memory) at elements another thread computed
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[8, 1, -1], contiguity=[True, None, True], dtype=DataType.Int32, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, 2, -1], contiguity=[True, True, True], dtype=DataType.Float, stride_order=None)
    T2 = fd.ops.permute(T1, dims=[0, 1, 2])
    T3 = fd.ops.clamp(T2, -1.5, 2.0)
    T4 = fd.ops.slice(T2, start_indices=[0, 0, 0], end_indices=[1, 2, 16])
    T5 = fd.ops.neg(T4)
    fd.add_output(T5)
    fd.add_output(T3)
    fd.sched.parallelize(T3, 0, ParallelType.block_y)
    fd.sched.parallelize(T4, 0, ParallelType.block_y)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8, 1, 16), dtype=torch.int32, device='cuda:0'),
    torch.testing.make_tensor((8, 2, 16), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
