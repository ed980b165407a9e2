# Seed 002, test Reduction: tv1 = sum(tv0, {2}) over a 3-d input, output axis 0 on streams.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.sum(T0, dims=[2], keepdim=False, dtype=DataType.Null)
    fd.add_output(T1)
    fd.sched.parallelize(T1, 0, ParallelType.stream)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4, 8, 16), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
