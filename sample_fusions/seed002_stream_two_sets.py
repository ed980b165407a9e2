# Seed 002, test TwoSetOps: two chained sets, both stream-parallelized, so the host
# program merges them into one stream for-loop.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.set(T0)
    T2 = fd.ops.set(T1)
    fd.add_output(T2)
    fd.sched.parallelize(T1, 0, ParallelType.stream)
    fd.sched.parallelize(T2, 0, ParallelType.stream)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
