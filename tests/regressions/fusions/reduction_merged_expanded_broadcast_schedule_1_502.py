# Found by tests/fuzz (schedule-1-502), mismatch: output: output 0: 2 of 2 differ beyond rtol=1e-05, e.g. flat 0: -447.3231201171875 != -223.66116333007812
# expect refused: the reduction runs inside a loop
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    T1 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    T2 = fd.define_tensor(shape=[-1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    T3 = fd.ops.add(T2, T1)
    T4 = fd.ops.broadcast_in_dim(T2, shape=[2, 64], broadcast_dims=[1])
    T5 = fd.ops.neg(T4)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=True)
    fd.add_output(T6)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.sched.merge(T6, 0)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0'),
    torch.randn(1, dtype=torch.float32, device='cuda:0').as_strided((64,), (0,)),
]
fd.execute(inputs)
