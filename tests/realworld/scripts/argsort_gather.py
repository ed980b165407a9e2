# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on token permutation in a mixture-of-experts layer: a stable argsort of the
# expert ids, then the tokens' rows gathered in that order (nvfuser_direct spelling).
import torch
from nvfuser_direct import FusionDefinition, DataType

def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    tv2 = fd.ops.argsort(tv0, dim=0, stable=True)
    tv3 = fd.ops.index_select(tv1, tv2, dim=0)
    tv4 = fd.ops.cumsum(tv3, dim=1)
    fd.add_output(tv2)
    fd.add_output(tv4)

with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randint(0, 4, (12,), dtype=torch.int64, device='cuda:0'),
    torch.randn((12, 5), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
