# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser vectorization misuse reports: a user schedule vectorizes an inner
# split of 4 over a contiguous axis of extent 10, which 4 does not divide. nvFuser
# refuses to launch such a kernel (the vectorized extent must divide the axis).
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class Relu(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.ops.relu(self.t0)
        self.add_output(self.t1)

    def schedule(self):
        c0 = self.sched.cache_after(self.t0)
        self.sched.split(self.t1, dim=1, factor=4)
        self.sched.transform_like(self.t1)
        self.sched.parallelize(self.t1, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t1, 1, ParallelType.block_x)
        self.sched.parallelize_like(self.t1)
        self.sched.parallelize(c0, -1, ParallelType.vectorize)
        self.sched.inline_most()


fd = Relu()
inputs = [torch.randn((6, 10), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
