# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on csarofeen/pytorch issue #2090 (late 2022, nvFuser inside PyTorch): the
# frontend imported from torch._C._nvfuser, a Fusion object handed to
# FusionDefinition(fs), define_tensor(symbolic_sizes=..., contiguous=...), view with
# original_shape=, scalars from define_constant, an erf GELU between a view and the
# view back, and fs.execute(inputs) called in a timing loop.
# Real sizes: a BERT-large-width MLP activation (4096 wide) over 8 x 2048 tokens.
# real-sizes: 24=16384 4=8 6=2048 40=4096
import torch
from torch._C._nvfuser import Fusion, FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguous=[True, True], dtype=DataType.Float)
    T1 = fd.ops.view(T0, original_shape=[24, 40], new_shape=[4, 6, 40])
    S2 = fd.define_constant(0.500000)
    T3 = fd.ops.mul(T1, S2)
    S4 = fd.define_constant(0.707107)
    T5 = fd.ops.mul(T1, S4)
    T6 = fd.ops.erf(T5)
    S7 = fd.define_constant(1.00000)
    T8 = fd.ops.add(T6, S7)
    T9 = fd.ops.mul(T3, T8)
    T10 = fd.ops.view(T9, original_shape=[4, 6, 40], new_shape=[24, 40])
    fd.add_output(T10)

fs = Fusion()
with FusionDefinition(fs) as fd :
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(24, 40, device='cuda')
]

for _ in range(5):
    out = fs.execute(inputs)
