# Found by tests/fuzz: two loop axes of T3 both on blockIdx.y gave wrong values; the lowering now
# refuses a parallel type bound to two axes of one tensor.
# expect refused: T3: loop axes 0 and 1 are both parallelized as grid_y
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Bool, stride_order=None)
    T1 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T3 = fd.ops.lt(T0, T2)
    S4 = fd.define_scalar(0.5, dtype=DataType.Double)
    T5 = fd.ops.gt(T1, S4)
    T6 = fd.ops.full([1], 1, DataType.Int32)
    T7 = fd.ops.where(T5, T1, T6)
    T8 = fd.ops.neg(T7)
    fd.add_output(T8)
    fd.add_output(T3)
    fd.sched.split(T3, 0, 2, False)
    fd.sched.transform_like(T3)
    fd.sched.parallelize(T3, 0, ParallelType.grid_y)
    fd.sched.parallelize(T3, 1, ParallelType.grid_y)
    fd.sched.parallelize_like(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((7,), dtype=torch.bool, device='cuda:0'),
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((7,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
