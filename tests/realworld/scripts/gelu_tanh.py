# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's tanh-approximated GELU fusions (nanoGPT MLP) in NVIDIA/Fuser issues:
# a chain of mul/add/tanh with define_scalar constants, bf16 in and out.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.ops.cast(T0, dtype=DataType.Float)
    S2 = fd.define_scalar(0.5, dtype=DataType.Double)
    T3 = fd.ops.mul(S2, T1)
    S4 = fd.define_scalar(3.0, dtype=DataType.Double)
    T5 = fd.ops.pow(T1, S4)
    S6 = fd.define_scalar(0.044715, dtype=DataType.Double)
    T7 = fd.ops.mul(S6, T5)
    T8 = fd.ops.add(T1, T7)
    S9 = fd.define_scalar(0.7978845608028654, dtype=DataType.Double)
    T10 = fd.ops.mul(S9, T8)
    T11 = fd.ops.tanh(T10)
    S12 = fd.define_scalar(1.0, dtype=DataType.Double)
    T13 = fd.ops.add(S12, T11)
    T14 = fd.ops.mul(T3, T13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T15)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.testing.make_tensor((8, 96), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
