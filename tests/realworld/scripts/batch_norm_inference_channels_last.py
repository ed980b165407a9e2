# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_batchnorm_fwd.py and
# test_python_frontend.py batch_norm tests: fd.ops.batch_norm in inference mode
# (training=False, running stats used, none updated) on a half-precision channels-last
# input given with stride_order, the output cast back to half.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id8(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 0, 2, 1])
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    S6 = fd.define_scalar(0.1, dtype=DataType.Double)
    S7 = fd.define_scalar(1e-05, dtype=DataType.Double)
    T8, T9, T10 = fd.ops.batch_norm(T5, T1, T2, T3, T4, S6, S7, training=False, channels_last=False)
    T11 = fd.ops.cast(T8, dtype=DataType.Half)
    fd.add_output(T11)


with FusionDefinition() as fd:
    nvfuser_fusion_id8(fd)

inputs = [
    torch.randn((4, 8, 6, 6), dtype=torch.float16, device='cuda:0').to(memory_format=torch.channels_last),
    torch.randn((8,), dtype=torch.float32, device='cuda:0'),
    torch.randn((8,), dtype=torch.float32, device='cuda:0'),
    torch.randn((8,), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((8,), dtype=torch.float32, device='cuda:0', low=0.5, high=1.5),
]
fd.execute(inputs)
