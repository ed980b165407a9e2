# Found by tests/fuzz (schedule-2026-19): 100 iterations bound to threadIdx.z passed compile and failed
# at launch (CUDA allows 64); the lowering now refuses it.
# expect refused: CUDA allows at most 64
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[None], dtype=DataType.Bool, stride_order=None)
    T1 = fd.define_tensor(shape=[-1], contiguity=[False], dtype=DataType.BFloat16, stride_order=None)
    T2 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Int32, stride_order=None)
    T3 = fd.ops.zeros([100], DataType.Float)
    T4 = fd.ops.add(T1, T3)
    T5 = fd.ops.ones([1], DataType.Int32)
    T6 = fd.ops.add(T2, T5)
    fd.add_output(T6)
    fd.add_output(T4)
    fd.sched.parallelize(T5, 0, ParallelType.vectorize)
    T7 = fd.sched.cache_after(T1)
    fd.sched.parallelize(T4, 0, ParallelType.block_z)
    fd.sched.inline_most()
    fd.sched.parallelize(T6, 0, ParallelType.grid_y)
    fd.sched.inline_most()


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1,), dtype=torch.bool, device='cuda:0').as_strided((100,), (0,)),
    torch.randn(199, dtype=torch.bfloat16, device='cuda:0').as_strided((100,), (2,)),
    torch.testing.make_tensor((1,), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
