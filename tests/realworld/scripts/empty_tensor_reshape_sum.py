# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py test_empty_reshape
# (issue #2362) and the zero-size input tests: an Int64 input with a zero-size axis and a
# None contiguity on its size-1 axis, reshaped with constant Int scalars, and a sum of an
# empty float tensor (all zeros) next to a non-empty one.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 1, -1, -1], contiguity=[False, None, True, True], dtype=DataType.Int, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    S2 = fd.define_scalar(6, dtype=DataType.Int)
    S3 = fd.define_scalar(0, dtype=DataType.Int)
    T4 = fd.ops.reshape(T0, new_shape=[S2, S3])
    T5 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Float)
    T6 = fd.ops.exp(T1)
    fd.add_output(T4)
    fd.add_output(T5)
    fd.add_output(T6)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 10, (0, 1, 2, 3), dtype=torch.int64, device='cuda:0'),
    torch.randn((0, 5), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
