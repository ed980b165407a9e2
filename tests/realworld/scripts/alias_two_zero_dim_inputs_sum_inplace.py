# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #2664 examples 2 and 3 (test_repro.py
# test_issue2664_repro2/3): 0-dim tensor inputs broadcast to a 1-D shape with
# shape=T1.shape() and broadcast_dims=[], a sum of the broadcast written in place into one
# 0-dim input (whose old value the broadcast still reads) and a scalar update written into
# the other; plus mul/add outputs of the broadcast.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T4 = fd.ops.broadcast_in_dim(T2, shape=T1.shape(), broadcast_dims=[])
    T5 = fd.ops.add(T1, T4)
    T6 = fd.ops.sum(T5, dims=[0], keepdim=False)
    S0 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T7 = fd.ops.add(T3, S0)
    S5 = fd.define_scalar(1000, dtype=DataType.Int)
    T8 = fd.ops.broadcast_in_dim(T3, shape=[S5], broadcast_dims=[])
    T9 = fd.ops.mul(T1, T8)
    T10 = fd.ops.add(T1, T4)
    fd.add_output(T6, T3)
    fd.add_output(T7, T2)
    fd.add_output(T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((1000,), dtype=torch.float32, device='cuda:0').as_strided((1000,), (1,)),
    torch.randn((1,), dtype=torch.float32, device='cuda:0').as_strided((), ()),
    torch.randn((1,), dtype=torch.float32, device='cuda:0').as_strided((), ()),
]
fd.execute(inputs)
