# Found by tests/fuzz (schedule-2026-5): T4 in shared memory, inlined into T5's loop on threadIdx.x,
# was allocated one element (ids left of ca_pos were dropped) that all 31 threads wrote: 30 of
# 31 values wrong. A shared buffer now keeps the ids whose loop is bound to a thread dimension.
import torch
from nvfuser import FusionDefinition, DataType, MemoryType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[None], dtype=DataType.Bool, stride_order=None)
    T1 = fd.ops.full([31], True, DataType.Bool)
    T2 = fd.ops.logical_and(T0, T1)
    T3 = fd.ops.iota(31, 0, 1, DataType.Int)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[31], broadcast_dims=[0])
    T5 = fd.ops.add(T2, T4)
    fd.add_output(T5)
    fd.sched.set_memory_type(T4, MemoryType.Shared)
    fd.sched.inline_most()
    fd.sched.parallelize(T5, 0, ParallelType.block_x)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1,), dtype=torch.bool, device='cuda:0').as_strided((31,), (0,)),
]
fd.execute(inputs)
