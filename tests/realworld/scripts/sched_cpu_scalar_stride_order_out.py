# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser repros mixing a CPU scalar tensor (is_cpu=True) with a 4-D input
# and an output permuted by fd.ops.stride_order (channels-last result), plus a user
# schedule in the style of test_schedule_ops.py: merge the two inner axes, split by a
# block and bind BIDx/TIDx, propagated to all tensors.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class ScaleChannelsLast(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        self.t2 = self.ops.mul(self.t0, self.t1)
        self.t3 = self.ops.relu(self.t2)
        self.t4 = self.ops.stride_order(self.t3, stride_order=[3, 0, 2, 1])
        self.add_output(self.t4)

    def schedule(self):
        self.sched.merge(self.t4, dim=2)
        self.sched.split(self.t4, dim=2, factor=32)
        self.sched.transform_like(self.t4)
        self.sched.parallelize(self.t4, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t4, -1, ParallelType.block_x)
        self.sched.parallelize_like(self.t4)
        self.sched.inline_most()


fd = ScaleChannelsLast()
inputs = [
    torch.randn((2, 3, 6, 10), dtype=torch.float32, device='cuda:0'),
    torch.tensor(0.75),
]
fd.execute(inputs)
