# Found by tests/fuzz (fusion-1-7240, long campaign seed 1): x + x.reshape(7, 1) computed T1 = -x once
# per thread at the outer-axis position and read it at the inner one (42 of 49 wrong). Both axes
# of the sum are the same axis of T1 (nvFuser: "Fusion has self mapping"); the schedulers now
# refuse such a fusion and the segmenter splits it. Same cause: fusion-1 cases 135, 2531, 2748,
# 3827, 4715, 5806, 5943, 6544, 6595, 7120, 7785, 863, 943, 9581, 9627, 9636, 9675.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.reshape(T1, [7, 1])
    T3 = fd.ops.add(T1, T2)
    fd.add_output(T3)
    fd.add_output(T1)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((7,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
