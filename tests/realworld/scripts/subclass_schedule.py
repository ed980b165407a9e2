# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py user-schedule tests: a
# FusionDefinition subclass with definition() and a sum with a dtype.
import torch
from nvfuser import FusionDefinition, DataType


class MyFusion(FusionDefinition):
    def definition(self):
        self.t0 = self.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half)
        self.t1 = self.ops.sum(self.t0, dims=[-1], keepdim=False, dtype=DataType.Float)
        self.add_output(self.t1)


fd = MyFusion()
inputs = [torch.randn(5, 33, dtype=torch.float16, device='cuda')]
fd.execute(inputs)
