# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of HF position ids from an attention mask:
# position_ids = mask.long().cumsum(-1) - 1; position_ids.masked_fill_(mask == 0, 1).
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.cumsum(T0, dim=1)
    S2 = fd.define_scalar(1, dtype=DataType.Int)
    T3 = fd.ops.sub(T1, S2)
    S4 = fd.define_scalar(0, dtype=DataType.Int)
    T5 = fd.ops.eq(T0, S4)
    T6 = fd.ops.where(T5, S2, T3)
    fd.add_output(T6)

with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randint(0, 2, (4, 16), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
