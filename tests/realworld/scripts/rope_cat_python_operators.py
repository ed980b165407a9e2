# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_rope.py (rope_with_cat_fusion, after HF
# Llama's apply_rotary_pos_emb): define_tensor with static shapes and no contiguity, q
# permuted to [B, H, S, D], halves sliced, the imaginary half negated with Python's unary
# minus on an fd tensor, cat, and `q * cos + q_rotated * sin` written with Python operators
# (the frontend's Tensor __mul__/__add__/__neg__), then a positional-dtype cast to bf16.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id12(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 8, 4, 16], dtype=DataType.BFloat16)
    T1 = fd.define_tensor(shape=[8, 16], dtype=DataType.BFloat16)
    T2 = fd.define_tensor(shape=[8, 16], dtype=DataType.BFloat16)
    T3 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T4 = fd.ops.slice(T3, start_indices=[0, 0, 0, 0], end_indices=[2, 4, 8, 8], strides=[1, 1, 1, 1])
    T5 = fd.ops.slice(T3, start_indices=[0, 0, 0, 8], end_indices=[2, 4, 8, 16], strides=[1, 1, 1, 1])
    T6 = fd.ops.cast(T5, dtype=DataType.Float)
    T7 = -T6
    T8 = fd.ops.cast(T7, dtype=DataType.BFloat16)
    T9 = fd.ops.cat([T8, T4], dim=-1)
    T10 = fd.ops.broadcast_in_dim(T1, shape=[1, 1, 8, 16], broadcast_dims=[2, 3])
    T11 = fd.ops.broadcast_in_dim(T2, shape=[1, 1, 8, 16], broadcast_dims=[2, 3])
    T12 = T3 * T10 + T9 * T11
    T13 = fd.ops.cast(T12, DataType.BFloat16)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id12(fd)

inputs = [
    torch.randn((2, 8, 4, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
