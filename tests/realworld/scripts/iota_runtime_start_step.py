# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py test_iota and Thunder's
# arange lowering: fd.ops.iota with a length from a size, runtime start/step scalars of
# Int and Double type, dtype= Int and Float, broadcast against a tensor.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id19(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    S3 = fd.ops.size(T0, 1)
    S4 = fd.define_scalar(3, dtype=DataType.Int)
    T5 = fd.ops.iota(S3, S1, S4, dtype=DataType.Int)
    S6 = fd.define_scalar(0.5, dtype=DataType.Double)
    T7 = fd.ops.iota(S3, S6, S2, dtype=DataType.Float)
    T8 = fd.ops.broadcast_in_dim(T5, shape=[9, 24], broadcast_dims=[1])
    T9 = fd.ops.broadcast_in_dim(T7, shape=[9, 24], broadcast_dims=[1])
    T10 = fd.ops.mul(T0, T9)
    T11 = fd.ops.add(T10, T8)
    fd.add_output(T11)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id19(fd)

inputs = [
    torch.randn((9, 24), dtype=torch.float32, device='cuda:0'),
    -5,
    0.25,
]
fd.execute(inputs)
