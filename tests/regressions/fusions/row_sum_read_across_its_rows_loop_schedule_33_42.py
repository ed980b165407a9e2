# ruff: noqa  (a repro script in nvFuser's format)
# Found by tests/fuzz (schedule-33-42, seed 33): the row sums s = sum(x, dims=[1]) are broadcast
# along a new outer axis and multiply where(x > 3.25, x, 0.5), so output row r needs the sums of
# every row. x's cache is inlined into both the sum and the product, which puts the sum in the
# product's loop over rows while the product reads it along its columns: each row read sums of
# rows not yet computed (all 961 outputs were 0). Lowering now refuses such a schedule.
# expect refused: reads T1 inside the loop over
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class RowSumAcross(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        self.t1 = self.ops.sum(self.t0, dims=[1], keepdim=False)
        self.t2 = self.ops.broadcast(self.t1, [True, False])
        self.t3 = self.ops.where(self.ops.gt(self.t0, 3.25), self.t0, 0.5)
        self.t4 = self.ops.mul(self.t2, self.t3)
        self.add_output(self.t4)

    def schedule(self):
        self.sched.cache_after(self.t0)
        self.sched.inline_most()
        self.sched.parallelize(self.t2, 0, ParallelType.block_y)


fd = RowSumAcross()
inputs = [torch.randn((31, 31), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
