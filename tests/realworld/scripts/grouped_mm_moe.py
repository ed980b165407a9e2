# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser PR #4613 (grouped_mm through ATen): a mixture-of-experts
# projection, tokens [m, k] sorted by expert times per-expert weights [g, k, n], the groups
# ending at the cumulative offsets; the result scaled by a per-token gate.
import torch
from nvfuser_direct import FusionDefinition, DataType

def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, is_cpu=False)
    tv3 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)
    tv4 = fd.ops.grouped_mm(tv0, tv1, tv2)
    tv5 = fd.ops.cast(tv4, dtype=DataType.Float)
    tv6 = fd.ops.mul(tv5, tv3)
    tv7 = fd.ops.cast(tv6, dtype=DataType.BFloat16)
    fd.add_output(tv7)

with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn((24, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((3, 16, 32), dtype=torch.bfloat16, device='cuda:0'),
    torch.tensor([5, 5, 24], dtype=torch.int32, device='cuda:0'),
    torch.rand((24, 1), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
