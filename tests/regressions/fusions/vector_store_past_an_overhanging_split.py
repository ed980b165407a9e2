# Found by tests/fuzz (schedule-54-1462, device fuzz seed 54): a store loop that the schedule only unrolled
# was widened into 8-half vector stores, predicated at each vector's first element. The 8s divide
# their split's input (32), but that 32 is a split of 17: the third vector started at element 16 and
# wrote 7 halves past the output (the emulator crashed, the GPU corrupts memory). lower/vectorize now
# also requires every split before the vector to divide its input.
import torch
from nvfuser import FusionDefinition, DataType, ParallelType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 7], contiguity=[True, True], dtype=DataType.Half, stride_order=None)
    T1 = fd.define_tensor(shape=[17, -1], contiguity=[True, True], dtype=DataType.Int, stride_order=None)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, stride_order=None)
    T3 = fd.ops.broadcast_in_dim(T2, shape=[8, 1, 7], broadcast_dims=[2])
    T4 = fd.ops.permute(T0, dims=[1, 0])
    fd.add_output(T4)
    fd.sched.parallelize(T4, 1, ParallelType.unroll)
    fd.sched.reorder(T4, {1: 1})
    fd.sched.split(T4, 1, 32, True)
    fd.sched.split(T4, 2, 8, True)
    fd.sched.inline_at(T4, 2, False)
    T5 = fd.sched.cache_after(T0)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((17, 7), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((17, 7), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((7,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
