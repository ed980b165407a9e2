# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_softmax_bwd.py (softmax_bwd_fusion) in
# bf16 with reduction_axis=0: sum(y * g) over the rows (a column reduction), broadcast
# through a define_vector [1, N], rounded to bf16 and back to float before the subtract
# (the benchmark's casts); a second grad over axis 1 sums the bf16 product with
# dtype=DataType.Float on the reduction itself (Thunder's sum(..., dtype=float32)).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.mul(T2, T3)
    T5 = fd.ops.sum(T4, dims=[0], keepdim=False, dtype=DataType.Null)
    V6 = fd.define_vector([1, T0.size(1)], dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T5, shape=V6, broadcast_dims=[1])
    T8 = fd.ops.cast(T7, dtype=DataType.BFloat16)
    V9 = fd.define_vector([T0.size(0), T0.size(1)], dtype=DataType.Int)
    T10 = fd.ops.broadcast_in_dim(T8, shape=V9, broadcast_dims=[0, 1])
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T12 = fd.ops.sub(T3, T11)
    T13 = fd.ops.mul(T2, T12)
    T14 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    T15 = fd.ops.mul(T0, T1)
    T16 = fd.ops.sum(T15, dims=[1], keepdim=True, dtype=DataType.Float)
    T17 = fd.ops.sub(T3, T16)
    T18 = fd.ops.mul(T2, T17)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T14)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.testing.make_tensor((72, 130), dtype=torch.bfloat16, device='cuda:0', low=0.0, high=0.1),
    torch.randn((72, 130), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
