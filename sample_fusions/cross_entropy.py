# Cross-entropy loss (mean over rows) from float logits and int64 class labels:
# log_softmax, pick each row's label with take_along_axis, negate, average.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    T2 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.broadcast_in_dim(T2, shape=[32, 100], broadcast_dims=[0])
    T4 = fd.ops.sub(T0, T3)
    T5 = fd.ops.exp(T4)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.log(T6)
    T8 = fd.ops.broadcast_in_dim(T7, shape=[32, 100], broadcast_dims=[0])
    T9 = fd.ops.sub(T4, T8)
    T10 = fd.ops.broadcast_in_dim(T1, shape=[32, 1], broadcast_dims=[0])
    T11 = fd.ops.take_along_axis(T9, T10, dim=1)
    T12 = fd.ops.neg(T11)
    T13 = fd.ops.sum(T12, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    S14 = fd.define_scalar(32.0, dtype=DataType.Double)
    T15 = fd.ops.div(T13, S14)
    fd.add_output(T15)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((32, 100), dtype=torch.float32, device='cuda:0'),
    torch.randint(0, 100, (32,), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
