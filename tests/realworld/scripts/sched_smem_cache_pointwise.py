# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py
# test_pointwise_smem_cache_user_schedule: cache_after on both inputs and cache_before
# on the output, all three caches placed in shared memory, and every tensor given the
# same merge / split / BIDx / TIDx schedule in a loop (no computeAt).
import torch
from nvfuser import FusionDefinition, DataType, ParallelType, MemoryType


class SmemSub(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t2 = self.ops.sub(self.t0, self.t1)
        self.add_output(self.t2)

    def schedule(self):
        t0_smem = self.sched.cache_after(self.t0)
        t1_smem = self.sched.cache_after(self.t1)
        t2_smem = self.sched.cache_before(self.t2)
        self.sched.set_memory_type(t0_smem, MemoryType.shared)
        self.sched.set_memory_type(t1_smem, MemoryType.shared)
        self.sched.set_memory_type(t2_smem, MemoryType.shared)

        for tensor in [t0_smem, t1_smem, t2_smem, self.t2]:
            self.sched.merge(tensor, dim=0)
            self.sched.split(tensor, dim=0, factor=64)
            self.sched.parallelize(tensor, axis := 0, ParallelType.grid_x)
            self.sched.parallelize(tensor, axis := 1, ParallelType.block_x)


fd = SmemSub()
inputs = [
    torch.randn((20, 45), dtype=torch.float32, device='cuda:0'),
    torch.randn((20, 45), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
