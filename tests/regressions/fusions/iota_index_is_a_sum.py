# Found by tests/fuzz (fusion-2026-149): iota's value start + index * step lost the parentheses
# around an index that is a sum (i * 2 + j), giving start + i * 2 + j * step.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.cat([T1, T0], dim=0)
    T3 = fd.ops.neg(T2)
    T4 = fd.ops.neg(T3)
    T5 = fd.ops.iota(4, 0, 2, DataType.Int)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[4], broadcast_dims=[0])
    T7 = fd.ops.mul(T4, T6)
    T8 = fd.ops.neg(T7)
    T9 = fd.ops.neg(T8)
    fd.add_output(T9)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T7)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
