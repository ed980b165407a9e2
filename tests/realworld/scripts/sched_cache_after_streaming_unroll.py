# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py cache_after calls with
# an explicit LoadStoreOpType / CacheOp (nvFuser's python enums LoadStoreOpType.set and
# CacheOp.streaming): a bf16 silu-mul with cached, vectorized loads, an unrolled
# middle axis and inline_at(pos=2) with best_effort.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType, LoadStoreOpType, CacheOp


class SiluMul(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
        self.t2 = self.ops.cast(self.t0, dtype=DataType.Float)
        self.t3 = self.ops.cast(self.t1, dtype=DataType.Float)
        self.t4 = self.ops.silu(self.t2)
        self.t5 = self.ops.mul(self.t4, self.t3)
        self.t6 = self.ops.cast(self.t5, dtype=DataType.BFloat16)
        self.add_output(self.t6)

    def schedule(self):
        c0 = self.sched.cache_after(self.t0, LoadStoreOpType.set, CacheOp.streaming)
        c1 = self.sched.cache_after(self.t1, LoadStoreOpType.set, CacheOp.streaming)
        c6 = self.sched.cache_before(self.t6)
        # [I0, I1] -> [I0, I1/8, 8] -> [I0, I1/8/2, 2, 8]
        self.sched.split(self.t6, dim=1, factor=8)
        self.sched.split(self.t6, dim=1, factor=2)
        self.sched.transform_like(self.t6)
        self.sched.parallelize(self.t6, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t6, 1, ParallelType.block_x)
        self.sched.parallelize(self.t6, 2, ParallelType.unroll)
        self.sched.parallelize_like(self.t6)
        self.sched.parallelize(c0, -1, ParallelType.vectorize)
        self.sched.parallelize(c1, -1, ParallelType.vectorize)
        self.sched.parallelize(self.t6, -1, ParallelType.vectorize)
        self.sched.inline_at(self.t6, pos=2, best_effort=True)


fd = SiluMul()
inputs = [
    torch.randn((12, 96), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((12, 96), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
