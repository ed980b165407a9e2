# Found by tests/fuzz (schedule-41-274): a user schedule binds the expanded broadcast axis of a
# sum's output to blockIdx.x. Every block wrote the one output element, and only block 0 had
# accumulated (the others wrote 0 over its sum). The write-back of a reduction now stores from
# the first thread or block along a launched broadcast axis only.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Int32, stride_order=None)
    T2 = fd.define_tensor(shape=[-1], contiguity=[False], dtype=DataType.Bool, stride_order=None)
    T3 = fd.ops.clamp(T1, -3, 4)
    T4 = fd.ops.iota(17, -2, -1, DataType.Int32)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[2, 17], broadcast_dims=[1])
    T6 = fd.ops.mul(T1, T5)
    T7 = fd.ops.sum(T1, dims=[1], keepdim=False)
    fd.add_output(T7)
    fd.sched.parallelize(T7, 0, ParallelType.grid_x)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((17,), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((17,), dtype=torch.int32, device='cuda:0').as_strided((2, 17), (0, 1)),
    torch.testing.make_tensor((33,), dtype=torch.bool, device='cuda:0').as_strided((17,), (2,)),
]
fd.execute(inputs)
