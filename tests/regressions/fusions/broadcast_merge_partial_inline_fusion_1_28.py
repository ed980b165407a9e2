# Found by tests/fuzz (fusion-1-28), mismatch: output: output 1: 94 of 100 differ, e.g. flat 0: 0 != 1
# Its one pointwise segment is refused at lowering (cannot be indexed from the loop nest); compile_fusion then
# segments those ops again, each apart, and the result must match the reference.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, stride_order=None)
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.neg(T0)
    T3 = fd.ops.broadcast_in_dim(T1, shape=[100, 2], broadcast_dims=[0])
    T4 = fd.ops.min(T3, dims=[0, 1], keepdim=True)
    T5 = fd.ops.neg(T4)
    T6 = fd.ops.neg(T5)
    fd.add_output(T6)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((100,), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
