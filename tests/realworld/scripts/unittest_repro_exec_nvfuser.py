# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser's tests/python/test_repro.py: issue repros kept as methods of a
# `class TestRepro(NVFuserTest)`, each a printed fusion function, an inputs list and
# `self.exec_nvfuser(fusion_func, inputs, validate=True)`. The first method is read (the
# helper call as the with block and the run it stands for), the others are skipped. A
# grouped-norm style row scale: reshape to groups, a sum per group, broadcast back.
# Real sizes: 8192 rows of 4096 channels in 32 groups of 128.
# real-sizes: 4=8192 24=4096 3=32 8=128
import torch
from nvfuser import FusionDefinition, DataType
from nvfuser.testing.utils import NVFuserTest


class TestRepro(NVFuserTest):
    def test_issue_group_scale(self):
        def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
            T0 = fd.define_tensor(
                shape=[4, 24],
                contiguity=[True, True],
                dtype=DataType.Float,
                is_cpu=False,
                stride_order=[1, 0],
            )
            T1 = fd.ops.reshape(T0, new_shape=[4, 3, 8])
            T2 = fd.ops.sum(T1, dims=[2], keepdim=False, dtype=DataType.Null)
            T3 = fd.ops.broadcast_in_dim(T2, shape=[4, 3, 8], broadcast_dims=[0, 1])
            T4 = fd.ops.div(T1, T3)
            T5 = fd.ops.reshape(T4, new_shape=[4, 24])
            fd.add_output(T5)

        inputs = [
            torch.testing.make_tensor((4, 24), dtype=torch.float32, device="cuda:0", low=1.0, high=2.0),
        ]
        self.exec_nvfuser(nvfuser_fusion_id0, inputs, validate=True)

    def test_issue_other(self):
        def nvfuser_fusion_id0(fd: FusionDefinition) -> None:
            T0 = fd.define_tensor(shape=[2], contiguity=[True], dtype=DataType.Float, is_cpu=False)
            fd.add_output(fd.ops.neg(T0))

        self.exec_nvfuser(nvfuser_fusion_id0, [torch.randn(2, device="cuda")])
