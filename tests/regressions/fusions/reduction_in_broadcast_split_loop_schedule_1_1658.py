# Found by tests/fuzz (schedule-1-1658), mismatch: output: output 0: 1 of 1 differ, e.g. flat 0: 20 != 10
# expect refused: the reduction runs inside a loop
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Int, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, stride_order=None)
    T2 = fd.ops.sum(T0, dims=[1], keepdim=True)
    T3 = fd.ops.add(T2, T1)
    T4 = fd.ops.sum(T2, dims=[0], keepdim=True)
    fd.add_output(T4)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.sched.split(T3, 1, 2, False)
    fd.sched.transform_like(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 1), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((2, 17), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
