# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_matmul.py (test_matmul_input_shapes with a
# batched lhs and a 2-D rhs) and test_linear_with_bias on a 3-D input: half-precision
# matmul broadcasting a 2-D weight over a batch, linear with bias on (B, S, K), and the
# results combined in float.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id33(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T4 = fd.ops.matmul(T0, T1)
    T5 = fd.ops.linear(T0, T2, T3)
    T6 = fd.ops.cast(T4, dtype=DataType.Float)
    T7 = fd.ops.cast(T5, dtype=DataType.Float)
    T8 = fd.ops.mul(T6, T7)
    T9 = fd.ops.cast(T8, dtype=DataType.Half)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id33(fd)

inputs = [
    torch.randn((3, 8, 16), dtype=torch.float16, device='cuda:0'),
    torch.randn((16, 12), dtype=torch.float16, device='cuda:0'),
    torch.randn((12, 16), dtype=torch.float16, device='cuda:0'),
    torch.randn((12,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
