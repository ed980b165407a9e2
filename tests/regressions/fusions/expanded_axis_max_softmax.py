# Found with expanded_axis_sum_beside_its_expansion: a softmax whose max reads x.expand() (x [64, 1])
# while the exp reads x.expand() + y; inner_persistent's kernel failed to lower and the fusion became 12
# one-op segments. Now: the max as a reduction, the rest inner_persistent.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[64, 1], contiguity=[True, None], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[64, 128], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.broadcast_in_dim(T0, shape=[64, 128], broadcast_dims=[0, 1])
    T3 = fd.ops.add(T2, T1)
    T4 = fd.ops.max(T2, dims=[1], keepdim=False)
    T5 = fd.ops.broadcast_in_dim(T4, shape=[64, 128], broadcast_dims=[0])
    T6 = fd.ops.sub(T3, T5)
    T7 = fd.ops.exp(T6)
    T8 = fd.ops.sum(T7, dims=[1], keepdim=False)
    T9 = fd.ops.broadcast_in_dim(T8, shape=[64, 128], broadcast_dims=[0])
    T10 = fd.ops.div(T7, T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((64, 128), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
