# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py test_reduction_auto_scheduler:
# inside schedule(), ask can_schedule for the pointwise scheduler (rejected for a
# reduction), list find_compatible_schedulers, then apply SchedulerType.reduction (the enum named SchedulerHeuristic in older releases).
import torch
from nvfuser import FusionDefinition, DataType, SchedulerType


class SumExp(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.ops.sum(self.t0, dims=[1], keepdim=False, dtype=DataType.Null)
        self.t2 = self.ops.exp(self.t1)
        self.add_output(self.t2)

    def schedule(self):
        pointwise_ok, reason = self.sched.can_schedule(SchedulerType.pointwise)
        compatible = self.sched.find_compatible_schedulers()
        self.sched.schedule(SchedulerType.reduction)


fd = SumExp()
inputs = [torch.randn((12, 257), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
