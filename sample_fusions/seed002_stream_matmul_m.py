# Seed 002, test Matmul_M: a matmul whose output's M axis is parallelized on streams, so
# the host program runs one matmul per row block on its own stream.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.matmul(T0, T1)
    fd.add_output(T2)
    fd.sched.parallelize(T2, 0, ParallelType.stream)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((8, 32), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((32, 16), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
