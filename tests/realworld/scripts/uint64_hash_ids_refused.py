# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on an nvfuser_direct repro that keeps hashed token ids as unsigned 64-bit
# (DataType.UInt64, in nvFuser's python DataType enum since 2025): this engine has no
# unsigned 64-bit type, and the file is refused at the dtype, naming it and the line.
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.UInt64, is_cpu=False)
    c1 = fd.define_scalar(1000003, dtype=DataType.Int)
    tv2 = fd.ops.cast(tv0, dtype=DataType.Int)
    tv3 = fd.ops.remainder(tv2, c1)
    fd.add_output(tv3)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.arange(64, dtype=torch.uint64, device='cuda:0'),
]
fd.execute(inputs)
