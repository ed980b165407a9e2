# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py test_var_mean_user_schedule:
# a hand-written normalization with mean and invstd as outputs, cache_after in shared
# memory, cache_before / cache_fork on outputs, rfactor of every reduction found with
# filter(is_reduction, tensors()), vectorized load and store, and inline_most.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType, MemoryType


class VarMeanNorm(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.eps = self.define_scalar(1e-5, dtype=DataType.Double)
        self.n = self.define_scalar(64, dtype=DataType.Int)

        self.sum0 = self.ops.sum(self.t0, dims=[-1], keepdim=True)
        self.mean = self.ops.div(self.sum0, self.n)
        self.add_output(self.mean)

        self.diff = self.ops.sub(self.t0, self.mean)
        self.diff_sq = self.ops.mul(self.diff, self.diff)
        self.sum1 = self.ops.sum(self.diff_sq, dims=[-1], keepdim=True)
        self.var = self.ops.div(self.sum1, self.n)
        self.invstd = self.ops.rsqrt(self.ops.add(self.var, self.eps))
        self.add_output(self.invstd)

        self.norm = self.ops.mul(self.diff, self.invstd)
        self.add_output(self.norm)

    def schedule(self):
        c0 = self.sched.cache_after(self.t0)
        self.sched.set_memory_type(c0, MemoryType.shared)
        c_norm = self.sched.cache_before(self.norm)
        c_mean = self.sched.cache_fork(self.mean)
        c_invstd = self.sched.cache_fork(self.invstd)

        ref = self.mean
        self.sched.split(ref, dim=-1, factor=16 * 4)
        self.sched.split(ref, dim=-1, factor=4)
        self.sched.transform_like(ref)

        reductions = list(filter(self.sched.is_reduction, self.sched.tensors()))
        rfactors = [self.sched.rfactor(t, dims=[-1]) for t in reductions]

        self.sched.parallelize(ref, 0, ParallelType.grid_x)
        self.sched.parallelize(ref, -2, ParallelType.block_x)
        self.sched.parallelize_like(ref)

        self.sched.parallelize(c0, -1, ParallelType.vectorize)
        self.sched.parallelize(self.norm, -1, ParallelType.vectorize)

        self.sched.inline_most()


fd = VarMeanNorm()
inputs = [torch.randn((10, 64), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
