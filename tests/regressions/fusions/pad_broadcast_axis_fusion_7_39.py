# Found by tests/fuzz: a pad that widens a broadcast axis wrote the input everywhere (the
# producer's broadcast index gave no 'inside' condition); fixed in engine/lower/op_values.py.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, stride_order=None)
    S1 = fd.define_scalar(0.5, dtype=DataType.Double)
    T2 = fd.ops.pad(T0, [1, 0], None)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
