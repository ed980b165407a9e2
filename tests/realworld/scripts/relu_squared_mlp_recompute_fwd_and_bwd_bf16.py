# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the squared-ReLU MLP activation (Primer; modded-nanogpt's
# F.relu(x).square()) as Thunder hands a rematerialized backward to nvFuser: relu of the
# saved bf16 fc1 output in float recomputed and squared (the forward value the down
# projection's weight grad needs) and the input grad g * 2 * relu(x), both bf16.
# real-sizes: 24=3072 13=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.relu(T2)
    T4 = fd.ops.mul(T3, T3)
    S5 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T6 = fd.ops.cast(T1, dtype=DataType.Float)
    T7 = fd.ops.mul(T6, S5)
    T8 = fd.ops.mul(T7, T3)
    T9 = fd.ops.cast(T4, dtype=DataType.BFloat16)
    T10 = fd.ops.cast(T8, dtype=DataType.BFloat16)
    fd.add_output(T9)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
