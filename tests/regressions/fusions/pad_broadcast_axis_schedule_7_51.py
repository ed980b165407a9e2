# Found by tests/fuzz: a pad that widens a broadcast axis wrote the input everywhere (the
# producer's broadcast index gave no 'inside' condition); fixed in engine/lower/op_values.py.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[1, 0])
    T1 = fd.ops.broadcast_in_dim(T0, shape=[16, 7, 2], broadcast_dims=[0, 1])
    T2 = fd.ops.set(T1)
    S3 = fd.define_scalar(0.5, dtype=DataType.Double)
    T4 = fd.ops.gt(T2, S3)
    T5 = fd.ops.where(T4, T2, T1)
    T6 = fd.ops.pad(T5, [1, 0], 0.5)
    fd.add_output(T6)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.add_output(T5)
    fd.sched.parallelize_like(T6)
    fd.sched.inline_most()


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 7), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
