# Found by tests/fuzz (fusion-3-573, seed 3): forwarding replicated T1 = sign(T0) into the segment of the pad
# of its broadcast axis, where no scheduler takes it (the pointwise scheduler needs the pad's input to be a
# segment input, the resize scheduler refuses a resize of a broadcast). compile_fusion now segments again
# without input forwarding when a segment is unschedulable with it, and says so in the trace.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Int32, stride_order=None)
    T1 = fd.ops.sign(T0)
    T2 = fd.ops.pad(T1, [0, 2, 3, 3, 0, 3], -3)
    T3 = fd.ops.iota(7, 0, -1, DataType.Int)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[4, 22, 7], broadcast_dims=[2])
    T5 = fd.ops.mul(T2, T4)
    T6 = fd.ops.set(T2)
    T7 = fd.ops.broadcast_in_dim(T0, shape=[1, 1, 16, 5], broadcast_dims=[0, 2, 3])
    T8 = fd.ops.segment_set(T6)
    fd.add_output(T8)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 16, 5), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
