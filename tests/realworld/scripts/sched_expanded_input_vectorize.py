# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser expanded-input repros (a 0-stride dimension made with
# as_strided, contiguity None for it) combined with test_schedule_ops.py's vectorized
# cache_after load: the contiguous input is cached with cache_after, split by 4 and
# vectorized; the expanded input is read with its broadcast axis in place.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class ExpandedMul(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
        self.t2 = self.ops.mul(self.t0, self.t1)
        self.t3 = self.ops.add(self.t2, self.t1)
        self.add_output(self.t3)

    def schedule(self):
        c0 = self.sched.cache_after(self.t0)
        self.sched.split(self.t3, dim=1, factor=4)
        self.sched.transform_like(self.t3)
        self.sched.parallelize(self.t3, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t3, 1, ParallelType.block_x)
        self.sched.parallelize_like(self.t3)
        self.sched.parallelize(c0, -1, ParallelType.vectorize)
        self.sched.parallelize(self.t3, -1, ParallelType.vectorize)
        self.sched.inline_most()


fd = ExpandedMul()
inputs = [
    torch.randn((9, 64), dtype=torch.float32, device='cuda:0'),
    torch.randn((64,), dtype=torch.float32, device='cuda:0').as_strided((9, 64), (0, 1)),
]
fd.execute(inputs)
