# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py
# test_pointwise_inline_selected_user_schedule: two splits of a merged output,
# transform_like / parallelize_like, then inline_at(pos=1) on the input caches only
# and inline_most on a selected set of tensors.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType, MemoryType


class SigmoidMul(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t2 = self.ops.sigmoid(self.t0)
        self.t3 = self.ops.mul(self.t2, self.t1)
        self.t4 = self.ops.neg(self.t3)
        self.add_output(self.t4)

    def schedule(self):
        c0 = self.sched.cache_after(self.t0)
        c1 = self.sched.cache_after(self.t1)
        c4 = self.sched.cache_before(self.t4)
        self.sched.set_memory_type(c0, MemoryType.shared)
        self.sched.set_memory_type(c1, MemoryType.shared)
        self.sched.set_memory_type(c4, MemoryType.shared)

        self.sched.merge(self.t4, dim=0)
        self.sched.split(self.t4, dim=0, factor=128)
        self.sched.split(self.t4, dim=0, factor=4)
        self.sched.transform_like(self.t4)

        self.sched.parallelize(self.t4, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t4, -1, ParallelType.block_x)
        self.sched.parallelize_like(self.t4)

        self.sched.inline_at(self.t2, pos=1, selected_tensors=[c0, c1])
        self.sched.inline_most(selected_tensors=[self.t2, self.t3, c4, self.t4])


fd = SigmoidMul()
inputs = [
    torch.randn((24, 130), dtype=torch.float32, device='cuda:0'),
    torch.randn((24, 130), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
