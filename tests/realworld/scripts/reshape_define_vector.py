# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser PR #721-era Thunder traces: shapes as fd.define_vector of
# scalars, reshape(T, new_shape=V) and broadcast_in_dim(shape=V).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(6, dtype=DataType.Int)
    S3 = fd.define_scalar(4, dtype=DataType.Int)
    V4 = fd.define_vector([S2, S3], dtype=DataType.Int)
    T5 = fd.ops.reshape(T0, new_shape=V4)
    V6 = fd.define_vector([6, 4], dtype=DataType.Int)
    T7 = fd.ops.broadcast_in_dim(T1, shape=V6, broadcast_dims=[1])
    T8 = fd.ops.mul(T5, T7)
    fd.add_output(T8)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((2, 3, 4), dtype=torch.float32, device='cuda:0'),
    torch.randn((4,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
