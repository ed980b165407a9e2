# Found by tests/fuzz (schedule-43-558, on the device), mismatch: output 0: 19 of 45 differ, e.g. nan != 0.0.
# T1 (a fusion output, in global memory) is written with its row axis split over 32 blocks, and
# T2 and T3 read it back in the same kernel with their column axis on blockIdx.x: each block read
# elements other blocks had not written yet (blocks do not wait for each other). Now refused.
# expect refused: reads T1 (global memory) at elements another block computed
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[7, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.pad(T0, [1, 2, 2, 0], 2.0)
    T2 = fd.ops.permute(T1, dims=[0, 1])
    T3 = fd.ops.remainder(T2, T1)
    fd.add_output(T3)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.sched.reorder(T1, {0: 1})
    fd.sched.inline_at(T3, 2, True)
    fd.sched.inline_most()
    fd.sched.parallelize(T3, 1, ParallelType.grid_x)
    fd.sched.split(T1, 1, 32, False)
    fd.sched.parallelize(T1, 1, ParallelType.grid_x)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((7, 2), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
