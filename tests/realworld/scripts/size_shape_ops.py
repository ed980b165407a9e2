# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder dynamic-shape traces (2024): fd.ops.size(T, dim=) scalars feeding
# reshape and broadcast_in_dim; fd.ops.shape(T) as a whole-shape vector.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    S2 = fd.ops.size(T0, dim=0)
    S3 = fd.ops.size(T0, dim=1)
    S4 = fd.ops.size(T0, dim=2)
    S5 = fd.ops.mul(S3, S4)
    T6 = fd.ops.reshape(T0, new_shape=[S2, S5])
    V7 = fd.ops.shape(T6)
    T8 = fd.ops.broadcast_in_dim(T1, shape=V7, broadcast_dims=[0, 1])
    T9 = fd.ops.add(T6, T8)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn((3, 4, 5), dtype=torch.float32, device='cuda:0'),
    torch.randn((3, 1), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
