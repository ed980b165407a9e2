# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2664 example 1 (test_repro.py test_issue2664_repro1):
# a 0-dim tensor input (shape=[], contiguity=[]) plus one, broadcast with
# broadcast_dims=[] to a 1-D shape and multiplied into another input, while the same
# 0-dim value is written back into the 0-dim input with fd.add_output(T4, T2): the
# in-place update must not race with the reads of the broadcast.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    S3 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T4 = fd.ops.add(T2, S3)
    S5 = fd.define_scalar(4096, dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T4, shape=[S5], broadcast_dims=[])
    T8 = fd.ops.mul(T1, T7)
    fd.add_output(T4, T2)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((4096,), dtype=torch.float32, device='cuda:0').as_strided((4096,), (1,)),
    torch.randn((1,), dtype=torch.float32, device='cuda:0').as_strided((), ()),
]
fd.execute(inputs)
