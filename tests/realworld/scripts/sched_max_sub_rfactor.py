# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py
# test_pointwise_partial_transform_user_schedule: a row max broadcast back and
# subtracted, caches in shared memory, transform_like over a selected set, the max
# scheduled separately and rfactored, and a vectorized shared-memory load of t0.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType, MemoryType


class MaxSubAdd(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t2 = self.ops.max(self.t0, dims=[-1], keepdim=False)
        self.t3 = self.ops.broadcast(self.t2, is_broadcast_dim=[False, True])
        self.t4 = self.ops.sub(self.t0, self.t3)
        self.t5 = self.ops.add(self.t4, self.t1)
        self.add_output(self.t5)

    def schedule(self):
        selected = [self.t2, self.t3, self.t4, self.t5]
        c0 = self.sched.cache_after(self.t0)
        c1 = self.sched.cache_after(self.t1)
        c5 = self.sched.cache_before(self.t5)
        self.sched.set_memory_type(c0, MemoryType.shared)
        self.sched.set_memory_type(c1, MemoryType.shared)
        self.sched.set_memory_type(c5, MemoryType.shared)
        self.sched.set_memory_type(self.t4, MemoryType.shared)

        selected.extend([c1, c5])
        self.sched.split(self.t5, dim=1, factor=32)
        self.sched.transform_like(self.t5, selected)

        self.sched.split(self.t2, dim=1, factor=32)
        self.sched.transform_like(self.t2, selected)

        t2_rf = self.sched.reduction_factor(self.t2, dims=[1])
        selected.append(t2_rf)

        self.sched.parallelize(self.t5, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t5, -1, ParallelType.block_x)
        self.sched.parallelize_like(self.t5, -1, selected)

        self.sched.parallelize(self.t2, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t2, -1, ParallelType.block_x)
        self.sched.parallelize_like(self.t2, -1, selected)

        self.sched.split(c0, dim=1, factor=4)
        self.sched.parallelize(c0, 0, ParallelType.grid_x)
        self.sched.parallelize(c0, 1, ParallelType.block_x)
        self.sched.parallelize(c0, 2, ParallelType.vectorize)


fd = MaxSubAdd()
inputs = [
    torch.randn((6, 96), dtype=torch.float32, device='cuda:0'),
    torch.randn((6, 96), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
