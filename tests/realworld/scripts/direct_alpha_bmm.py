# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvfuser_direct repros (NVIDIA/Fuser python/python_direct, 2025-2026): bmm,
# torch.add/sub with alpha (add_alpha, sub_alpha), reductions spelled keep_dim=, a size read
# off fd.ops.shape with fd.ops.at, and an output laid out by add_output(stride_order=).
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    tv3 = fd.ops.bmm(tv0, tv1)
    c4 = fd.define_scalar(0.5, dtype=DataType.Double)
    tv5 = fd.ops.add_alpha(tv2, tv3, c4)
    tv6 = fd.ops.sum(tv5, dims=[2], keep_dim=True, dtype=DataType.Null)
    tv7 = fd.ops.sub_alpha(tv5, tv6, c4)
    v8 = fd.ops.shape(tv7)
    c9 = fd.ops.at(v8, index=0)
    tv10 = fd.ops.reshape(tv7, new_shape=[c9, -1])
    fd.add_output(tv10, stride_order=[0, 1])


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((2, 4, 6), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 6, 5), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 4, 5), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
