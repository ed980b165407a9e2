# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder GELU backward (erf form) fusions: erf, exp, several scalar
# constants and two outputs, float inputs with a broadcast bias.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id9(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.ops.broadcast_in_dim(T1, shape=[16, 24], broadcast_dims=[1])
    T4 = fd.ops.add(T0, T3)
    S5 = fd.define_scalar(0.7071067811865476, dtype=DataType.Double)
    T6 = fd.ops.mul(T4, S5)
    T7 = fd.ops.erf(T6)
    S8 = fd.define_scalar(1.0, dtype=DataType.Double)
    T9 = fd.ops.add(T7, S8)
    S10 = fd.define_scalar(0.5, dtype=DataType.Double)
    T11 = fd.ops.mul(T9, S10)
    T12 = fd.ops.mul(T4, T4)
    S13 = fd.define_scalar(-0.5, dtype=DataType.Double)
    T14 = fd.ops.mul(T12, S13)
    T15 = fd.ops.exp(T14)
    S16 = fd.define_scalar(0.3989422804014327, dtype=DataType.Double)
    T17 = fd.ops.mul(T15, S16)
    T18 = fd.ops.mul(T4, T17)
    T19 = fd.ops.add(T11, T18)
    T20 = fd.ops.mul(T2, T19)
    T21 = fd.ops.sum(T20, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T20)
    fd.add_output(T21)


with FusionDefinition() as fd:
    nvfuser_fusion_id9(fd)

inputs = [
    torch.randn((16, 24), dtype=torch.float32, device='cuda:0'),
    torch.randn((24,), dtype=torch.float32, device='cuda:0'),
    torch.randn((16, 24), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
