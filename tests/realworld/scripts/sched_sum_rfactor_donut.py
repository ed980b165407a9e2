# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py test_reduction_factor_op:
# a 3-D input reduced over its last axis, the reduction split twice and rfactored
# over non-adjacent axes ("donut" factoring, dims=[2, 4]), with a bf16 input cast up.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class SumDonut(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
        self.t1 = self.ops.cast(self.t0, dtype=DataType.Float)
        self.t2 = self.ops.sum(self.t1, dims=[-1], keepdim=False, dtype=DataType.Null)
        self.add_output(self.t2)

    def schedule(self):
        self.sched.split(self.t2, 2, 4)
        self.sched.split(self.t2, 2, 2)
        t2_rf = self.sched.reduction_factor(self.t2, [2, 4])
        self.sched.parallelize(self.t2, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t2, 1, ParallelType.block_y)


fd = SumDonut()
inputs = [torch.randn((8, 8, 24), dtype=torch.bfloat16, device='cuda:0')]
fd.execute(inputs)
