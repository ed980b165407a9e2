# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2275 repro 2 (test_repro.py test_issue2275_repro2): the
# input defined with fd.from_pytorch(inputs[0]), rotate-half via slices and cat, the
# dtype of cast given positionally, sin + cos of the cat nested inside add(), and a cat
# with an empty slice of the input. Shrunk from (2, 32, 4096, 128) to (2, 4, 6, 16).
import torch
from nvfuser import FusionDefinition, DataType

inputs = [torch.randn((2, 4, 6, 16), dtype=torch.bfloat16, device="cuda:0")]


def fusion_func(fd: FusionDefinition) -> None:
    T0 = fd.from_pytorch(inputs[0])

    T1 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 6, 16], strides=[1, 1, 1, 1])
    T2 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 6, 8], strides=[1, 1, 1, 1])
    T3 = fd.ops.slice(T1, start_indices=[0, 0, 0, 8], end_indices=[2, 4, 6, 16], strides=[1, 1, 1, 1])
    T4 = fd.ops.cast(fd.ops.neg(T3), DataType.BFloat16)
    T5 = fd.ops.cat([T4, T2], dim=-1)
    T6 = fd.ops.add(fd.ops.sin(T5), fd.ops.cos(T5))
    T7 = fd.ops.cast(T6, DataType.BFloat16)

    T100 = fd.ops.slice(T0, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 6, 0], strides=[1, 1, 1, 1])
    T101 = fd.ops.cat([T7, T100], dim=-1)
    fd.add_output(T101)


with FusionDefinition() as fd:
    fusion_func(fd)

nvf_out = fd.execute(inputs)
