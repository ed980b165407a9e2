# Found while checking the persistent schedulers on expanded inputs: the sum over x's expanded axis 0
# beside x.expand() * y. outer_persistent accepted the whole fusion but its kernel read T7 at elements
# other threads computed; the ops were then split into 7 segments, one per op. The persistent schedulers
# now refuse a reduction over an expanded broadcast axis (reduction + pointwise), and a scheduler whose
# kernel fails to lower is refused for that group before its ops are split apart.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 64], contiguity=[None, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[32, 64], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.broadcast_in_dim(T0, shape=[32, 64], broadcast_dims=[0, 1])
    T3 = fd.ops.sum(T2, dims=[0], keepdim=False)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[32, 64], broadcast_dims=[1])
    T5 = fd.ops.mul(T2, T1)
    T6 = fd.ops.add(T5, T4)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 64), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((32, 64), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
