# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #490 ("Error in graph, is not a DAG", mid-2023): a
# Double log_softmax + weighted NLL in the spellings of that time (symbolic_sizes=,
# axes=, output_shape=, reshape with original_shape=), an identity reshape of a 1-D
# weight, the per-row loss and its class-weighted sum, several outputs sharing inputs.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Double, is_cpu=False)
    T1 = fd.define_tensor(symbolic_sizes=[-1, -1], contiguity=[True, True], dtype=DataType.Double, is_cpu=False)
    T2 = fd.define_tensor(symbolic_sizes=[-1], contiguity=[True], dtype=DataType.Double, is_cpu=False)
    T3 = fd.define_tensor(symbolic_sizes=[-1], contiguity=[True], dtype=DataType.Double, is_cpu=False)
    T4 = fd.ops.reshape(T2, original_shape=[18], new_shape=[18])
    T5 = fd.ops.max(T0, axes=[1], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T5, output_shape=[7, 1], broadcast_dims=[0])
    T7 = fd.ops.broadcast_in_dim(T6, output_shape=[7, 18], broadcast_dims=[0, 1])
    T8 = fd.ops.sub(T0, T7)
    T9 = fd.ops.exp(T8)
    T10 = fd.ops.sum(T9, axes=[1], keepdim=False, dtype=DataType.Null)
    T11 = fd.ops.broadcast_in_dim(T10, output_shape=[7, 1], broadcast_dims=[0])
    T12 = fd.ops.log(T11)
    T13 = fd.ops.broadcast_in_dim(T12, output_shape=[7, 18], broadcast_dims=[0, 1])
    T14 = fd.ops.sub(T8, T13)
    T15 = fd.ops.neg(T14)
    T16 = fd.ops.mul(T15, T1)
    T17 = fd.ops.broadcast_in_dim(T4, output_shape=[7, 18], broadcast_dims=[1])
    T18 = fd.ops.mul(T16, T17)
    T19 = fd.ops.sum(T18, axes=[1], keepdim=False, dtype=DataType.Null)
    T20 = fd.ops.mul(T1, T17)
    T21 = fd.ops.sum(T20, axes=[0, 1], keepdim=False, dtype=DataType.Null)
    T22 = fd.ops.sum(T19, axes=[0], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.div(T22, T21)
    T24 = fd.ops.reshape(T3, original_shape=[7], new_shape=[7, 1])
    T25 = fd.ops.mul(T13, T24)
    fd.add_output(T19)
    fd.add_output(T23)
    fd.add_output(T25)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((7, 18), dtype=torch.float64, device='cuda:0'),
    torch.rand((7, 18), dtype=torch.float64, device='cuda:0'),
    torch.rand((18,), dtype=torch.float64, device='cuda:0'),
    torch.randn((7,), dtype=torch.float64, device='cuda:0'),
]
fd.execute(inputs)
