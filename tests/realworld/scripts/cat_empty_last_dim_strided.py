# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1246 (test_repro.py test_issue1246): a cat along the
# last axis of a scaled tensor and an empty tensor whose last axis has size 0, the empty
# one given with the strides of its non-empty sibling and contiguity False on an inner
# axis; the cat is an output on its own and again after a multiply by 1.0.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, False, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T3 = fd.ops.mul(T0, S2)
    T4 = fd.ops.cat([T3, T1], dim=-1)
    S5 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    fd.add_output(T4)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((192,), dtype=torch.float32, device='cuda:0').as_strided((1, 4, 6, 8), (192, 48, 8, 1)),
    torch.randn((0,), dtype=torch.float32, device='cuda:0').as_strided((1, 4, 6, 0), (192, 48, 8, 1)),
]
fd.execute(inputs)
