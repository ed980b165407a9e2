# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py
# test_pointwise_basic_user_schedule: a FusionDefinition subclass whose schedule()
# merges the output, splits it by a block size and binds BIDx/TIDx.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class PointwiseMulAdd(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t2 = self.ops.mul(self.t0, self.t1)
        self.t3 = self.ops.add(self.t2, self.t0)
        self.add_output(self.t3)

    def schedule(self):
        self.sched.merge(self.t3, dim=0)
        self.sched.split(self.t3, dim=0, factor=128)
        self.sched.parallelize(self.t3, axis := 0, ParallelType.grid_x)
        self.sched.parallelize(self.t3, axis := 1, ParallelType.block_x)


fd = PointwiseMulAdd()
inputs = [
    torch.randn((37, 71), dtype=torch.float32, device='cuda:0'),
    torch.randn((37, 71), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
