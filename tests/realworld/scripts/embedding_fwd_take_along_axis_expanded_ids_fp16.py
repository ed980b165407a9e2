# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the embedding lookup written as a gather along the vocabulary axis (torch
# take_along_dim / Thunder take_along_axis, the exact-sized gather nvFuser schedules as
# pointwise): the flat token ids [N] broadcast_in_dim-expanded to [N, H] and
# take_along_axis(weight, ids, dim=0) on an OPT-1.3B-like fp16 table (vocab 50272,
# hidden 2048), then the learned positional rows added (a second [N, H] input) in fp16.
# real-sizes: 112=50272 32=2048 20=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    S3 = fd.ops.size(T0, dim=0)
    S4 = fd.ops.size(T1, dim=1)
    V5 = fd.define_vector([S3, S4], dtype=DataType.Int)
    T6 = fd.ops.broadcast_in_dim(T0, shape=V5, broadcast_dims=[0])
    T7 = fd.ops.take_along_axis(T1, T6, dim=0)
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T9 = fd.ops.cast(T2, dtype=DataType.Float)
    T10 = fd.ops.add(T8, T9)
    T11 = fd.ops.cast(T10, dtype=DataType.Half)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randint(0, 112, (20,), dtype=torch.int64, device='cuda:0'),
    torch.randn((112, 32), dtype=torch.float16, device='cuda:0'),
    torch.randn((20, 32), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
