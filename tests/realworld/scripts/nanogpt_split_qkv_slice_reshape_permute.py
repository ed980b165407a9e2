# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/test_high_complexity.py
# test_nanogpt_split_mha_linears (nanoGPT's c_attn output split into q, k and v): the
# [B, T, 3C] activation sliced along the last axis into three [B, T, C] pieces with
# positional start / end / stride lists, each reshaped to heads [B, T, nh, hs] and permuted
# to [B, nh, T, hs]; a second fusion returns the three slices alone. Shrunk: B 16 -> 2,
# T 128 -> 32, C 1024 -> 256 (4 heads of 64).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.ops.slice(T0, [0, 0, 0], [2, 32, 256], [1, 1, 1])
    T2 = fd.ops.slice(T0, [0, 0, 256], [2, 32, 512], [1, 1, 1])
    T3 = fd.ops.slice(T0, [0, 0, 512], [2, 32, 768], [1, 1, 1])
    T4 = fd.ops.reshape(T1, [2, 32, 4, 64])
    T5 = fd.ops.reshape(T2, [2, 32, 4, 64])
    T6 = fd.ops.reshape(T3, [2, 32, 4, 64])
    T7 = fd.ops.permute(T4, [0, 2, 1, 3])
    T8 = fd.ops.permute(T5, [0, 2, 1, 3])
    T9 = fd.ops.permute(T6, [0, 2, 1, 3])
    fd.add_output(T7)
    fd.add_output(T8)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_0(fd)

inputs = [
    torch.randn(2, 32, 768, device="cuda"),
]
fd.execute(inputs)
