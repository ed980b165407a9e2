# Found by tests/fuzz (fusion-1-9657): compile crashed with KeyError "scalar i2 is not bound": a
# segment input whose extent is an expression (i2 + 5, made by a pad in another segment) binds no
# symbol, and nothing else in the segment referenced i2; the segment now takes i2 as a scalar input.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, stride_order=[1, 0, 2])
    T1 = fd.ops.iota(1, 0, 2, DataType.Int32)
    T2 = fd.ops.broadcast_in_dim(T1, shape=[64, 5, 1], broadcast_dims=[2])
    T3 = fd.ops.mul(T0, T2)
    T4 = fd.ops.pad(T0, [2, 3, 0, 2], None)
    T5 = fd.ops.div(T0, T3)
    T6 = fd.ops.gelu(T5)
    T7 = fd.ops.segment_set(T4)
    T8 = fd.ops.iota(1, -2, 2, DataType.Int32)
    T9 = fd.ops.broadcast_in_dim(T8, shape=[64, 5, 1], broadcast_dims=[2])
    T10 = fd.ops.mul(T3, T9)
    T11 = fd.ops.pad(T3, [0, 3, 0, 2, 1, 0], 0.5)
    T12 = fd.ops.full([64, 7, 6], 7, DataType.Int32)
    T13 = fd.ops.ne(T7, T12)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64, 5, 1), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
