# Found by tests/fuzz (schedule-3-5028), mismatch: output: output 0: 1 of 1 differ beyond rtol=1e-05, e.g. flat 0: 20.841285705566406 != 10.420641899108887
# The overhang bS{2} of the split bS{1}, merged into the reduction axis, summed each element twice.
# expect refused: mixes a reduction axis with a broadcast axis of 2 iterations
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, 5], contiguity=[True, True], dtype=DataType.Float, stride_order=None)
    T2 = fd.define_tensor(shape=[1, -1], contiguity=[None, None], dtype=DataType.Float, stride_order=None)
    T3 = fd.ops.sum(T2, dims=[1], keepdim=False)
    fd.add_output(T3)
    fd.sched.split(T3, 0, 2, True)
    fd.sched.merge(T3, 1)
    fd.sched.parallelize_like(T3)
    fd.sched.inline_most()


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((5, 5), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((5, 5), dtype=torch.float32, device='cuda:0'),
    torch.randn(1, dtype=torch.float32, device='cuda:0').as_strided((1, 5), (1, 0)),
]
fd.execute(inputs)
