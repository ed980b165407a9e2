# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder traces of a scalar loss: a 0-dim CUDA tensor reduced with sum/amax over
# all (no) axes, as `loss.sum()` on a tensor that is already a scalar. nvFuser's
# reductionOpZeroDimTensor turns such a reduction into a copy.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.ops.sum(T0, dtype=DataType.Float)
    T3 = fd.ops.max(T0)
    S4 = fd.define_scalar(0.5, dtype=DataType.Double)
    T5 = fd.ops.mul(T2, S4)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[16], broadcast_dims=[])
    T7 = fd.ops.mul(T1, T6)
    fd.add_output(T3)
    fd.add_output(T7)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.testing.make_tensor((), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((16,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
