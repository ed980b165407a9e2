# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1279 (test_repro.py test_issue1279): var_mean with
# correction=0 over a size-1 (broadcast) axis of a half input cast to float, both
# statistics cast back to half: the variance is all zeros and the mean is the input.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Half, is_cpu=False)
    T4 = fd.ops.cast(T0, dtype=DataType.Float)
    T5, T6 = fd.ops.var_mean(T4, dims=[1], correction=0, keepdim=False)
    T7 = fd.ops.cast(T5, dtype=DataType.Half)
    T8 = fd.ops.cast(T6, dtype=DataType.Half)
    fd.add_output(T7)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(2, 1, 2, dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
