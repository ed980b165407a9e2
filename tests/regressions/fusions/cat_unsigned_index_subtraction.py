# Found by tests/fuzz (fusion-2026-61): a cat's second input was read at (thread index - 7), whose
# bounds test '>= 0' was computed in unsigned thread-index arithmetic (always true): SIGSEGV.
# Index terms made of thread/block indices are now cast to nvfuser_index_t before a subtraction.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, stride_order=None)
    T2 = fd.ops.neg(T1)
    T3 = fd.ops.cat([T1, T2], dim=0)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[2, 14], broadcast_dims=[1])
    fd.add_output(T4)
    fd.add_output(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((7,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
