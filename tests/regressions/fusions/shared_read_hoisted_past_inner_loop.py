# Found by tests/fuzz (schedule-21-33): T1 reordered so that its loop over T2's contiguous
# pair (i5) runs outside the loop over rows (i4); the pair's vector read of shared T2 was
# hoisted above i5, with an index that names i4, declared only inside (g++: 'i4' was not
# declared). A shared read is now hoisted only when its base names no inner loop's variable.
import torch
from nvfuser import FusionDefinition, DataType, MemoryType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.neg(T0)
    fd.add_output(T1)
    fd.sched.split(T1, 0, 2, False)
    T2 = fd.sched.cache_after(T0)
    T3 = fd.sched.cache_after(T1)
    fd.sched.transform_like(T1)
    fd.sched.transform_like(T1)
    fd.sched.reorder(T1, {2: 3})
    fd.sched.set_memory_type(T2, MemoryType.Shared)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 129, 2), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
