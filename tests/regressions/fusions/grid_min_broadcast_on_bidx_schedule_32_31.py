# ruff: noqa  (a repro script in nvFuser's format)
# Found by tests/fuzz (schedule-32-31, seed 32): a min over 129 elements bound to blockIdx.x (a
# grid reduction) whose broadcast output T5 keeps its broadcast axis on blockIdx.x, inlined. The
# write of T5 was guarded by `blockIdx.x == 0 && T4_last`, but only the last block to arrive
# holds the result and it need not be block 0: the output was never written. A grid-reduced
# value's flag already picks one block along the reduced block dimensions.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class GridMinBroadcast(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        self.t1 = self.ops.min(self.t0, dims=[0], keepdim=False)
        self.t2 = self.ops.broadcast(self.t1, [True])
        self.add_output(self.t2)

    def schedule(self):
        self.sched.parallelize(self.t2, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t1, 0, ParallelType.grid_x)
        self.sched.inline_most()


fd = GridMinBroadcast()
inputs = [torch.randn((129,), dtype=torch.bfloat16, device='cuda:0')]
fd.execute(inputs)
