# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #1273 (test_repro.py test_issue1273): a [2, 2] input
# reshaped to [2, 1, 2] (a new size-1 axis), var_mean over the last axis, the statistics
# broadcast back through the size-1 axis, eps as a runtime Double input, and the
# normalized result reshaped back to [2, 2].
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Double)
    T7 = fd.ops.reshape(T0, new_shape=[2, 1, 2])
    T8, T9 = fd.ops.var_mean(T7, dims=[2], correction=0, keepdim=False)
    T14 = fd.ops.broadcast_in_dim(T8, shape=[2, 1, 1], broadcast_dims=[0, 1])
    T19 = fd.ops.broadcast_in_dim(T9, shape=[2, 1, 1], broadcast_dims=[0, 1])
    T20 = fd.ops.add(T14, S1)
    T21 = fd.ops.rsqrt(T20)
    T26 = fd.ops.broadcast_in_dim(T19, shape=[2, 1, 2], broadcast_dims=[0, 1, 2])
    T27 = fd.ops.sub(T7, T26)
    T32 = fd.ops.broadcast_in_dim(T21, shape=[2, 1, 2], broadcast_dims=[0, 1, 2])
    T33 = fd.ops.mul(T27, T32)
    T37 = fd.ops.reshape(T33, new_shape=[2, 2])
    fd.add_output(T37)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((4,), dtype=torch.float32, device='cuda:0').as_strided((2, 2), (2, 1)),
    1e-05,
]
fd.execute(inputs)
