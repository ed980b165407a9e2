# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py pad and cat tests
# (test_pad, test_pad_cache, test_cat_symbolic, test_pad_prior_cat): pad with a scalar fill
# value and pad widths covering two axes, pad with a negative width (a crop), cat on a
# negative dim with manual_padding=False, and cat of a padded tensor.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(-3.5, dtype=DataType.Double)
    T3 = fd.ops.pad(T0, [1, 2, 0, 1], S2)
    T4 = fd.ops.pad(T1, [-1, 1])
    T5 = fd.ops.cat([T0, T4], dim=-1, manual_padding=False)
    T6 = fd.ops.exp(T5)
    T7 = fd.ops.pad(T0, [0, 0, 2, 0], 1.0)
    T8 = fd.ops.cat([T7, T0], 0)
    fd.add_output(T3)
    fd.add_output(T6)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.randn((6, 10), dtype=torch.float32, device='cuda:0'),
    torch.randn((6, 7), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
