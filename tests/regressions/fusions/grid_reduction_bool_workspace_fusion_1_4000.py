# Found by tests/fuzz (fusion-1-4000; schedule-1-1774 the same): emulate raised "T20_work is bool (1 bytes) but
# the tensor is torch.float32": a grid max over a bool tensor keeps bool partials in its workspace, which
# the host allocated as float32 (its C-type table lacked bool); every element C type now maps.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, stride_order=None)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, stride_order=None)
    T3 = fd.ops.permute(T1, dims=[1, 0])
    T4 = fd.ops.le(T3, 2.0)
    T5 = fd.ops.logical_or(T4, False)
    T6 = fd.ops.neg(T2)
    T7 = fd.ops.iota(31, 0.0, 0.25, DataType.Float)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[129, 31], broadcast_dims=[1])
    T9 = fd.ops.mul(T6, T8)
    T10 = fd.ops.slice(T9, start_indices=[0, 0], end_indices=[129, 1])
    S11 = fd.define_scalar(0.5, dtype=DataType.Double)
    T12 = fd.ops.gt(T10, S11)
    S13 = fd.define_scalar(0.5, dtype=DataType.Double)
    T14 = fd.ops.where(T12, T10, S13)
    T15 = fd.ops.max(T4, dims=[0, 1], keepdim=True)
    fd.add_output(T15)
    fd.add_output(T3)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T9)
    fd.add_output(T10)
    fd.add_output(T14)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((31,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((129, 31), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((129, 31), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
