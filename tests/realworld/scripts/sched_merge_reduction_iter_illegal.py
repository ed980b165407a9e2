# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_schedule_ops.py test_merge_op, the error
# case: merging the last iteration axis of a [I0, I1, R2] reduction output with its
# reduction axis, which nvFuser refuses ("Merging IterDomains requires that their
# iteration types match").
import torch
from nvfuser import FusionDefinition, DataType


class SumLast(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[8, 8, 8], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
        self.t1 = self.ops.sum(self.t0, dims=[-1], keepdim=False, dtype=DataType.Null)
        self.add_output(self.t1)

    def schedule(self):
        self.sched.merge(self.t1, 1)


fd = SumLast()
inputs = [torch.randn((8, 8, 8), dtype=torch.float32, device='cuda:0')]
fd.execute(inputs)
