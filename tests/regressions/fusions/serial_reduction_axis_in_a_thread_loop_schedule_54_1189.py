# Found by tests/fuzz (schedule-54-1189, device fuzz seed 54): T7 = sum(T3) was inlined into T6's
# threadIdx.x loop with its own reduction axis serial, so each of the two threads summed its one
# element and wrote it as the total (2.0 != 6.5). Lowering now refuses a reduction axis in a loop
# bound to threads or blocks it is not itself bound to.
# expect refused: its reduction axis rS7{i3} runs in a loop bound to threadIdx.x
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2], contiguity=[True], dtype=DataType.Int32, stride_order=None)
    T1 = fd.define_tensor(shape=[-1], contiguity=[False], dtype=DataType.Float, stride_order=None)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T3 = fd.ops.neg(T2)
    T4 = fd.ops.iota(2, 0, 1, DataType.Int)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[2], broadcast_dims=[0])
    T6 = fd.ops.mul(T3, T5)
    T7 = fd.ops.sum(T3, dims=[0], keepdim=True)
    fd.add_output(T7)
    fd.add_output(T3)
    fd.add_output(T6)
    fd.sched.parallelize(T6, 0, ParallelType.block_x)
    fd.sched.inline_most()
    fd.sched.inline_most()


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2,), dtype=torch.int32, device='cuda:0'),
    torch.randn(3, dtype=torch.float32, device='cuda:0').as_strided((2,), (2,)),
    torch.testing.make_tensor((2,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
