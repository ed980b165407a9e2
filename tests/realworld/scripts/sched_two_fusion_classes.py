# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py, where several
# FusionDefinition subclasses with user schedules sit in one file: two classes here,
# a scheduled one that is not run and a second one (TIDy/TIDx 2-D tile) that is.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class RowScale(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.ops.mul(self.t0, self.t0)
        self.add_output(self.t1)

    def schedule(self):
        self.sched.merge(self.t1, dim=0)
        self.sched.split(self.t1, dim=0, factor=256)
        self.sched.parallelize(self.t1, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t1, 1, ParallelType.block_x)


class Tile2D(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.s0 = self.define_scalar(None, dtype=DataType.Double)
        self.t1 = self.ops.mul(self.t0, self.s0)
        self.t2 = self.ops.abs(self.t1)
        self.add_output(self.t2)

    def schedule(self):
        # [I0, I1] -> [I0/8, 8, I1/16, 16] -> [I0/8, I1/16, 8, 16]
        self.sched.split(self.t2, dim=1, factor=16)
        self.sched.split(self.t2, dim=0, factor=8)
        self.sched.reorder(self.t2, {1: 2, 2: 1})
        self.sched.transform_like(self.t2)
        self.sched.parallelize(self.t2, 0, ParallelType.grid_y)
        self.sched.parallelize(self.t2, 1, ParallelType.grid_x)
        self.sched.parallelize(self.t2, 2, ParallelType.block_y)
        self.sched.parallelize(self.t2, 3, ParallelType.block_x)
        self.sched.parallelize_like(self.t2)
        self.sched.inline_most()


fd = Tile2D()
inputs = [
    torch.randn((19, 50), dtype=torch.float32, device='cuda:0'),
    -1.5,
]
fd.execute(inputs)
