# Found by tests/fuzz (schedule-3-5447), mismatch: output: output 0: 17 of 17 differ beyond rtol=1e-05, e.g. flat 0: 0.7009778022766113 != -6.875166416168213
# inline_most joined the min's reduction loop and the adds' loop through the cached input (T1
# read unfinished); engine/ir/verify.py's reduction_read_in_its_loop now stops it there.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[17], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.min(T0, dims=[0], keepdim=False)
    T2 = fd.ops.add(T0, T1)
    T3 = fd.ops.add(T2, T1)
    fd.add_output(T3)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.sched.transform_like(T3)
    T4 = fd.sched.cache_after(T0)
    fd.sched.inline_most()
    fd.sched.parallelize_like(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((17,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
