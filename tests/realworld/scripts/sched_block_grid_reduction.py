# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/examples/04-reduction_rfactor.py and
# test_schedule_ops.py test_reduction_factor_op: an outer (dim 0) sum of a [R, I]
# input whose reduction axis is split by 16, rfactored, and the remaining reduction
# bound to TIDy (a block reduction) while the iteration axis is split over BIDx/TIDx.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class ColSum(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.ops.sum(self.t0, dims=[0], keepdim=False, dtype=DataType.Null)
        self.add_output(self.t1)

    def schedule(self):
        # [R0, I1] -> [R0/16, R16, I1]
        self.sched.split(self.t1, dim=0, factor=16)
        # [R0/16, R16, I1/32, 32]
        self.sched.split(self.t1, dim=2, factor=32)
        # rfactor the serial outer reduction: t1_rf [rR0/16, i16, I1/32, 32],
        # t1 keeps [R16, I1/32, 32]
        t1_rf = self.sched.rfactor(self.t1, dims=[0])
        self.sched.parallelize(self.t1, 0, ParallelType.block_y)
        self.sched.parallelize(self.t1, 1, ParallelType.grid_x)
        self.sched.parallelize(self.t1, 2, ParallelType.block_x)
        self.sched.parallelize_like(self.t1)
        self.sched.inline_most()


fd = ColSum()
inputs = [torch.randn((100, 70), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
