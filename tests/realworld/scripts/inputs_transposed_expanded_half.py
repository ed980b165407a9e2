# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py tests that build strided
# inputs with torch methods rather than as_strided (test_transpose inputs made with
# .transpose/.t(), broadcast inputs with .expand, test_basic_fp16 with .half(), and
# channels-last ones with .to(memory_format=...)): the fusion sees the strides these give.
import torch
from nvfuser import FusionDefinition, DataType

inputs = [
    torch.randn(24, 10, device="cuda").t(),
    torch.randn(6, 10, 4, device="cuda").permute(2, 0, 1).half(),
    torch.randn(10, device="cuda").expand(4, 6, 10),
    torch.randn(8, 24, device="cuda").transpose(0, 1).contiguous().to(dtype=torch.bfloat16),
]


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[0, 1])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[0, 2, 1])
    T2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, None, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.add(T4, T2)
    T6 = fd.ops.sum(T5, dims=[0], keepdim=False, dtype=DataType.Float)
    T7 = fd.ops.permute(T6, dims=[1, 0])
    T8 = fd.ops.cast(T3, dtype=DataType.Float)
    T9 = fd.ops.sum(T8, dims=[1], keepdim=True, dtype=DataType.Float)
    T10 = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Float)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[10, 6], broadcast_dims=[0])
    T12 = fd.ops.add(T7, T11)
    fd.add_output(T12)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

fd.execute(inputs)
