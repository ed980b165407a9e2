# Bias add followed by the exact (erf) GELU, in fp16 computed in float:
# y = 0.5 * (x + b) * (1 + erf((x + b) / sqrt(2))).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.cast(T1, dtype=DataType.Float)
    T4 = fd.ops.broadcast_in_dim(T3, shape=[128, 384], broadcast_dims=[1])
    T5 = fd.ops.add(T2, T4)
    S6 = fd.define_scalar(0.7071067811865476, dtype=DataType.Double)
    T7 = fd.ops.mul(T5, S6)
    T8 = fd.ops.erf(T7)
    S9 = fd.define_scalar(1.0, dtype=DataType.Double)
    T10 = fd.ops.add(T8, S9)
    T11 = fd.ops.mul(T5, T10)
    S12 = fd.define_scalar(0.5, dtype=DataType.Double)
    T13 = fd.ops.mul(T11, S12)
    T14 = fd.ops.cast(T13, dtype=DataType.Half)
    fd.add_output(T14)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((128, 384), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((384,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
