# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2317 (test_repro.py test_issue2317): attention output
# [B, H, S, D] permuted to [B, S, H, D], made contiguous with fd.ops.stride_order,
# reshaped to the shape of another input (new_shape=T1.shape()), a linear plus residual,
# cast to bf16, and a second linear with a residual. Inputs via fd.from_pytorch; shrunk
# from (16, 25, 128, 64) / 1600 features to (2, 3, 4, 8) / 24.
import torch
from nvfuser import FusionDefinition, DataType

inputs = [
    torch.randn((2, 3, 4, 8), dtype=torch.bfloat16, device="cuda:0"),
    torch.randn((2, 4, 24), dtype=torch.bfloat16, device="cuda:0"),
    torch.randn((24, 24), dtype=torch.bfloat16, device="cuda:0"),
]


def fusion_func(fd: FusionDefinition):
    T0 = fd.from_pytorch(inputs[0])
    T1 = fd.from_pytorch(inputs[1])
    T2 = fd.from_pytorch(inputs[2])

    T10 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T11 = fd.ops.stride_order(T10, stride_order=[3, 2, 1, 0])
    T16 = fd.ops.reshape(T11, new_shape=T1.shape())
    T17 = fd.ops.linear(T16, T2)
    T33 = fd.ops.add(T17, T1)

    T33 = fd.ops.cast(T33, dtype=DataType.BFloat16)
    T34 = fd.ops.linear(T33, T2)
    T35 = fd.ops.add(T34, T33)
    fd.add_output(T35)


with FusionDefinition() as fd:
    fusion_func(fd)

nvf_out = fd.execute(inputs)
