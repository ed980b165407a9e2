# Seed 002 (nvFuser PR "Stream lowering of single device fusions"), test SingleSetOp:
# tv1 = set(tv0) with tv1's outer axis parallelized on streams.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.set(T0)
    fd.add_output(T1)
    fd.sched.parallelize(T1, 0, ParallelType.stream)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
