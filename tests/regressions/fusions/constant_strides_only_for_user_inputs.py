# Found by tests/fuzz (fusion-45-125) while pointwise kernels learned constant strides: the second
# segment reads T8, an output of the first, whose run-time layout (the first kernel's allocation)
# differs from the example value it was compiled with. Only the fusion's own inputs and the
# kernel's outputs are addressed with constant strides.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float, stride_order=None)
    T1 = fd.ops.neg(T0)
    T2 = fd.ops.broadcast_in_dim(T1, shape=[5, 5, 1, 1], broadcast_dims=[0, 2, 3])
    S3 = fd.define_scalar(0.5, dtype=DataType.Double)
    T4 = fd.ops.gt(T1, S3)
    T5 = fd.ops.where(T4, T1, T0)
    T6 = fd.ops.neg(T5)
    T7 = fd.ops.permute(T6, dims=[0, 1, 2])
    T8 = fd.ops.neg(T2)
    T9 = fd.ops.add(T5, T8)
    T10 = fd.ops.neg(T9)
    fd.add_output(T10)
    fd.add_output(T1)
    fd.add_output(T2)
    fd.add_output(T5)
    fd.add_output(T6)
    fd.add_output(T7)
    fd.add_output(T8)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((5, 1, 1), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
