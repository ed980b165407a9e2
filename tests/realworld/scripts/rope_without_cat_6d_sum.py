# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_rope.py (rope_without_cat_fusion, the
# variant that multiplies by a precomputed [S, 2, F/2, 2] cos/sin matrix instead of slicing
# and concatenating q): q [B, S, H, F] reshaped to 5-D, permuted [0, 2, 1, 4, 3], broadcast
# to 6-D against the matrix, a sum over the last dim with a positional negative dim list
# (`fd.ops.sum(T, [-1])`), a positional-dtype cast to bf16 and a reshape to [B, H, S, F].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id13(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 8, 4, 16], dtype=DataType.BFloat16)
    T1 = fd.define_tensor(shape=[8, 2, 8, 2], dtype=DataType.BFloat16)
    T2 = fd.ops.reshape(T0, new_shape=[2, 8, 4, 2, 8])
    T3 = fd.ops.permute(T2, dims=[0, 2, 1, 4, 3])
    T4 = fd.ops.broadcast_in_dim(T3, shape=[2, 4, 8, 1, 8, 2], broadcast_dims=[0, 1, 2, 4, 5])
    T5 = fd.ops.broadcast_in_dim(T1, shape=[2, 4, 8, 2, 8, 2], broadcast_dims=[2, 3, 4, 5])
    T6 = fd.ops.mul(T4, T5)
    T7 = fd.ops.sum(T6, [-1])
    T8 = fd.ops.cast(T7, DataType.BFloat16)
    T9 = fd.ops.reshape(T8, new_shape=[2, 4, 8, 16])
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id13(fd)

inputs = [
    torch.randn((2, 8, 4, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8, 2, 8, 2), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
