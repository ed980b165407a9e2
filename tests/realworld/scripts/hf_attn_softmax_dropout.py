# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_huggingface_attn_fwd.py (HF BART self
# attention without the matmuls, Thunder's hf_bart_self_attn): scores + additive mask in
# float, reshaped to [B*H, S, S] through a define_vector whose first entry is the product
# `T0.size(0) * T0.size(1)` of two size scalars, softmax with reciprocal, then dropout from
# fd.ops.uniform without seed or offset (nvFuser's own philox state).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id10(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.add(T3, T2)
    V5 = fd.define_vector([T0.size(0) * T0.size(1), T0.size(2), T0.size(3)], dtype=DataType.Int)
    T6 = fd.ops.reshape(T4, new_shape=V5)
    T7 = fd.ops.max(T6, dims=[2], keepdim=False, dtype=DataType.Null)
    V8 = fd.define_vector([T0.size(0) * T0.size(1), T0.size(2), 1], dtype=DataType.Int)
    T9 = fd.ops.broadcast_in_dim(T7, shape=V8, broadcast_dims=[0, 1])
    T10 = fd.ops.broadcast_in_dim(T9, shape=V5, broadcast_dims=[0, 1, 2])
    T11 = fd.ops.sub(T6, T10)
    T12 = fd.ops.exp(T11)
    T13 = fd.ops.sum(T12, dims=[2], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.broadcast_in_dim(T13, shape=V8, broadcast_dims=[0, 1])
    T15 = fd.ops.broadcast_in_dim(T14, shape=V5, broadcast_dims=[0, 1, 2])
    T16 = fd.ops.reciprocal(T15)
    T17 = fd.ops.mul(T12, T16)
    S18 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S19 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T20 = fd.ops.uniform(S18, S19, shape=V5, dtype=DataType.Float)
    S21 = fd.define_scalar(0.9, dtype=DataType.Double)
    T22 = fd.ops.lt(T20, S21)
    T23 = fd.ops.cast(T22, dtype=DataType.Float)
    T24 = fd.ops.mul(T17, T23)
    S25 = fd.define_scalar(1.1111111111111112, dtype=DataType.Double)
    T26 = fd.ops.mul(T24, S25)
    T27 = fd.ops.cast(T17, dtype=DataType.Half)
    T28 = fd.ops.cast(T26, dtype=DataType.Half)
    fd.add_output(T28)
    fd.add_output(T27)
    fd.add_output(T22)


with FusionDefinition() as fd:
    nvfuser_fusion_id10(fd)

inputs = [
    torch.zeros((2, 4, 12, 12), dtype=torch.float16, device='cuda:0'),
    torch.randn((2, 4, 12, 12), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
