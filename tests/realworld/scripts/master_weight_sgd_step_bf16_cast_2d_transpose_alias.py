# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on mixed-precision training steps that Thunder fuses around a linear's weight
# (fp32 master weight, bf16 compute copy; cf. NVIDIA/Fuser tests/python/test_python_frontend.py
# alias tests and the transpose benchmarks of benchmarks/python/test_transpose.py): a
# weight-decayed SGD update of the fp32 parameter [N, K] with a bf16 grad and a runtime
# learning rate (a Double input), written back into the parameter with
# fd.add_output(T, alias), the bf16 copy and its 2-D transpose [K, N] (for the backward
# matmul) as outputs.
# real-sizes: 24=4096 40=11008
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[24, 40], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[24, 40], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    S2 = fd.define_scalar(None, dtype=DataType.Double)
    S3 = fd.define_scalar(0.10000, dtype=DataType.Double)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.mul(T0, S3)
    T6 = fd.ops.add(T4, T5)
    T7 = fd.ops.mul(T6, S2)
    T8 = fd.ops.sub(T0, T7)
    T9 = fd.ops.cast(T8, dtype=DataType.BFloat16)
    T10 = fd.ops.permute(T9, dims=[1, 0])
    fd.add_output(T8, T0)
    fd.add_output(T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((24, 40), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((24, 40), dtype=torch.bfloat16, device='cuda:0'),
    0.0003,
]
fd.execute(inputs)
