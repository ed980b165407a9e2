# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the channels_last case of NVIDIA/Fuser benchmarks/python/test_batchnorm_fwd.py
# and the frontend's batch_norm tests: an NHWC fp16 tensor (the channels-last activation
# permuted to put C last, contiguous) through fd.ops.batch_norm(..., training=True,
# channels_last=True) with float running statistics updated in place, the output cast back
# to fp16 and followed by relu; mean and invstd [C] returned.
# real-sizes: 6=64 7=56 16=256
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.cast(T2, dtype=DataType.Float)
    S8 = fd.define_scalar(0.100000, dtype=DataType.Double)
    S9 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T10, T11, T12 = fd.ops.batch_norm(T5, T6, T7, T3, T4, S8, S9, True, channels_last=True)
    T13 = fd.ops.relu(T10)
    T14 = fd.ops.cast(T13, dtype=DataType.Half)
    fd.add_output(T14)
    fd.add_output(T11)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.randn((6, 7, 7, 16), dtype=torch.float16, device='cuda:0'),
    torch.randn((16,), dtype=torch.float16, device='cuda:0'),
    torch.randn((16,), dtype=torch.float16, device='cuda:0'),
    torch.zeros((16,), dtype=torch.float32, device='cuda:0'),
    torch.ones((16,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
