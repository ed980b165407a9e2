# T1 in shared memory, inlined at 1 into T2's threadIdx.y loop, its inner axis serial and read
# on threadIdx.x: the buffer keeps a row per threadIdx.y (it kept one row that every row of
# threads overwrote), and only threadIdx.x == 0 writes it before the barrier (each thread of a
# row wrote the whole row).
import torch
from nvfuser import FusionDefinition, DataType, MemoryType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.mul(T0, T0)
    T2 = fd.ops.add(T0, T1)
    fd.add_output(T2)
    fd.sched.set_memory_type(T1, MemoryType.Shared)
    fd.sched.inline_at(T1, 1, False)
    fd.sched.parallelize(T2, 0, ParallelType.block_y)
    fd.sched.parallelize(T2, 1, ParallelType.block_x)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((5, 7), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
