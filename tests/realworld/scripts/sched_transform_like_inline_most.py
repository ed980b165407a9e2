# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py
# test_pointwise_inline_most_user_schedule: schedule the output once, propagate it
# with transform_like / parallelize_like (no selection: every tensor), then
# inline_most. Inputs are built with from_pytorch as in the test; half precision.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType, MemoryType

inputs = [
    torch.randn((16, 100), dtype=torch.float16, device='cuda:0'),
    torch.randn((16, 100), dtype=torch.float16, device='cuda:0'),
]


class HalfExpAdd(FusionDefinition):
    def definition(self):
        self.t0 = self.from_pytorch(inputs[0])
        self.t1 = self.from_pytorch(inputs[1])
        self.t2 = self.ops.cast(self.t0, dtype=DataType.Float)
        self.t3 = self.ops.cast(self.t1, dtype=DataType.Float)
        self.t4 = self.ops.add(self.t2, self.t3)
        self.t5 = self.ops.exp(self.t4)
        self.t6 = self.ops.cast(self.t5, dtype=DataType.Half)
        self.add_output(self.t6)

    def schedule(self):
        c0 = fd.sched.cache_after(self.t0)
        c1 = fd.sched.cache_after(self.t1)
        c6 = fd.sched.cache_before(self.t6)
        fd.sched.set_memory_type(c0, MemoryType.shared)
        fd.sched.set_memory_type(c1, MemoryType.shared)
        fd.sched.set_memory_type(c6, MemoryType.shared)

        fd.sched.merge(self.t6, dim=0)
        fd.sched.split(self.t6, dim=0, factor=128)
        fd.sched.transform_like(self.t6)

        fd.sched.parallelize(self.t6, axis := 0, ParallelType.grid_x)
        fd.sched.parallelize(self.t6, axis := 1, ParallelType.block_x)
        fd.sched.parallelize_like(self.t6)

        fd.sched.inline_most()


fd = HalfExpAdd()
fd.execute(inputs)
