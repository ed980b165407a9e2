# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser PR #460 ("Clip slice range expressions", 2023) and the
# slicing repros around it: slice on symbolic shapes with numpy/PyTorch index rules
# (manual_normalization off): negative starts and stops counted from the end, a stop
# past the extent (INT64_MAX, how a frontend spells `x[2:]`), a range that runs
# backwards and is empty, and start/stop passed in as runtime Int scalars (one negative).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[2, 1, 0])
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    S3 = fd.define_scalar(None, dtype=DataType.Int)
    T4 = fd.ops.slice(T0, start_indices=[S2, 0], end_indices=[S3, 5], strides=[1, 1])
    T5 = fd.ops.slice(T0, start_indices=[2, 1], end_indices=[9223372036854775807, -1], strides=[1, 1])
    T6 = fd.ops.slice(T0, start_indices=[3, 4], end_indices=[1, 2], strides=[1, 1])
    T7 = fd.ops.slice(T1, start_indices=[0, 1, -4], end_indices=[2, 100, -1], strides=[1, 1, 1], manual_normalization=0)
    S8 = fd.define_scalar(1.50000, dtype=DataType.Double)
    T9 = fd.ops.pad(T7, [1, 2], S8)
    T10 = fd.ops.permute(T9, dims=[2, 0, 1])
    T11 = fd.ops.reshape(T10, new_shape=[-1])
    T12 = fd.ops.cast(T11, dtype=DataType.Float)
    T13 = fd.ops.sum(T12, dims=[0], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.exp(T5)
    fd.add_output(T4)
    fd.add_output(T14)
    fd.add_output(T6)
    fd.add_output(T11)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((6, 7), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 5, 9), dtype=torch.float16, device='cuda:0'),
    -4,
    100,
]
fd.execute(inputs)
