# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py test_squeeze and
# test_expand/test_broadcast_in_dim_with_dynamic_shapes: squeeze with negative dims,
# squeeze of an expanded axis with squeeze_expanded=True, broadcast_in_dim to another
# tensor's symbolic shape() and expand to sizes read with fd.ops.size.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id11(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1, 1], contiguity=[True, None, True, None], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.squeeze(T0, dims=[-1, 1])
    T3 = fd.ops.broadcast_in_dim(T2, shape=T1.shape(), broadcast_dims=[0, 2])
    T4 = fd.ops.add(T3, T1)
    S5 = fd.ops.size(T1, 0)
    S6 = fd.define_scalar(3, dtype=DataType.Int)
    S7 = fd.ops.size(T1, 2)
    T8 = fd.ops.broadcast_in_dim(T2, shape=[S5, 1, S7], broadcast_dims=[0, 2])
    T9 = fd.ops.expand(T8, shape=[S5, S6, S7])
    T10 = fd.ops.squeeze(T9, [1], squeeze_expanded=True)
    T11 = fd.ops.sum(T4, dims=[1], keepdim=False, dtype=DataType.Float)
    T12 = fd.ops.add(T11, T10)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id11(fd)

inputs = [
    torch.randn((5, 1, 12, 1), dtype=torch.float32, device='cuda:0'),
    torch.randn((5, 7, 12), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
