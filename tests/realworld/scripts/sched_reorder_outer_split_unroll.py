# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py (test_reorder_op and the
# TMA var-mean schedule): a 3-D pointwise op with a broadcast bias, reorder of the
# output's axes, an outer split (inner_split=False), an unroll/unswitch pair and a
# TIDx/BIDx binding, propagated with transform_like / parallelize_like + inline_most.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


class BiasGelu(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
        self.t2 = self.ops.broadcast_in_dim(self.t1, shape=self.t0.shape(), broadcast_dims=[2])
        self.t3 = self.ops.add(self.t0, self.t2)
        self.t4 = self.ops.tanh(self.t3)
        self.add_output(self.t4)

    def schedule(self):
        # [I0, I1, I2] -> [I1, I0, I2]
        self.sched.reorder(self.t4, {0: 1, 1: 0})
        # [I1, I0*I2]
        self.sched.merge(self.t4, dim=1)
        # [I1, 2, ceilDiv(I0*I2, 2)]
        self.sched.split(self.t4, dim=1, factor=2, inner_split=False)
        # [I1, 2, ceilDiv(., 32), 32]
        self.sched.split(self.t4, dim=2, factor=32)
        # [I1, 2, ceilDiv(., 32), 1, 32]
        self.sched.split(self.t4, dim=2, factor=1)
        self.sched.transform_like(self.t4)
        self.sched.parallelize(self.t4, 0, ParallelType.grid_x)
        self.sched.parallelize(self.t4, 1, ParallelType.unswitch)
        self.sched.parallelize(self.t4, 3, ParallelType.unroll)
        self.sched.parallelize(self.t4, 4, ParallelType.block_x)
        self.sched.parallelize_like(self.t4)
        self.sched.inline_most()


fd = BiasGelu()
inputs = [
    torch.randn((5, 6, 40), dtype=torch.float32, device='cuda:0'),
    torch.randn((40,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
