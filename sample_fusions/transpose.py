# A transpose feeding a pointwise op: out = permute(x, [1, 0]) * 2 + y, where y is laid
# out as the output, so one of the two inputs is read across its rows.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.permute(T0, dims=[1, 0])
    S3 = fd.define_scalar(2.0, dtype=DataType.Double)
    T4 = fd.ops.mul(T2, S3)
    T5 = fd.ops.add(T4, T1)
    fd.add_output(T5)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((64, 96), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((96, 64), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
