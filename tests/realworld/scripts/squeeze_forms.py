# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser test_python_frontend.py squeeze tests across versions: the old
# squeeze(T, original_shape, dims) and the newer squeeze(T, dims=[...]).
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.squeeze(T0, original_shape=[3, 1, 5], dims=[1])
    T3 = fd.ops.squeeze(T1, dims=[0, 2])
    T4 = fd.ops.broadcast_in_dim(T3, shape=[3, 5], broadcast_dims=[0])
    T5 = fd.ops.add(T2, T4)
    T6 = fd.ops.squeeze(T0, [3, 1, 5], [-2])
    fd.add_output(T5)
    fd.add_output(T6)

inputs = [
    torch.randn((3, 1, 5), device='cuda:0'),
    torch.randn((1, 3, 1), device='cuda:0'),
]
fd.execute(inputs)
