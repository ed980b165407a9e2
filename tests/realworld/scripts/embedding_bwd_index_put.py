# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser PR #4066 (embedding backward through index_put_accumulate):
# the weight gradient is a zero [V, D] tensor with each token's gradient row added at its id.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.reshape(T0, new_shape=[12])
    T3 = fd.ops.reshape(T1, new_shape=[12, 8])
    S4 = fd.define_scalar(0.0, dtype=DataType.Double)
    T5 = fd.ops.full(shape=[10, 8], fill_value=S4, dtype=DataType.Float)
    T6 = fd.ops.index_put_accumulate(T5, T2, T3)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randint(0, 10, (3, 4), dtype=torch.int64, device='cuda:0'),
    torch.randn((3, 4, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
