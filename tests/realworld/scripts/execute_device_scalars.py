# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser's printed repros with mixed inputs: an as_strided input, a CPU
# scalar tensor (is_cpu=True), a runtime Double scalar, torch.tensor(3.0), and
# fd.execute(inputs, device=...).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id12(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[False, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    T3 = fd.ops.mul(T0, T1)
    T4 = fd.ops.add(T3, S2)
    fd.add_output(T4)


with FusionDefinition() as fd:
    nvfuser_fusion_id12(fd)

inputs = [
    torch.randn((80,), dtype=torch.float32, device='cuda:0').as_strided((5, 7), (16, 1)),
    torch.tensor(3.0),
    0.25,
]
fd.execute(inputs, device="cuda:0")
