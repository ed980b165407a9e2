# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on an OPT-13B final LayerNorm (hidden 5120, fp16) in the nvfuser_direct spelling
# of NVIDIA/Fuser python/python_direct tests: var_mean with keepdim=True (no
# broadcast_in_dim for the statistics; they broadcast implicitly against the [N, H] input),
# eps added as a Python float, the affine step on weight and bias broadcast with
# fd.ops.broadcast and a bool mask, fp16 output; rstd [N, 1] out as well.
# real-sizes: 16=8192 40=5120
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Half, is_cpu=False)
    tv1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    tv2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half, is_cpu=False)
    tv3 = fd.ops.cast(tv0, DataType.Float)
    tv4, tv5 = fd.ops.var_mean(tv3, dims=[1], correction=0, keepdim=True)
    tv6 = fd.ops.add(tv4, 1e-05)
    tv7 = fd.ops.rsqrt(tv6)
    tv8 = fd.ops.sub(tv3, tv5)
    tv9 = fd.ops.mul(tv8, tv7)
    tv10 = fd.ops.broadcast(tv1, [True, False])
    tv11 = fd.ops.broadcast(tv2, [True, False])
    tv12 = fd.ops.mul(tv9, tv10)
    tv13 = fd.ops.add(tv12, tv11)
    tv14 = fd.ops.cast(tv13, DataType.Half)
    fd.add_output(tv14)
    fd.add_output(tv7)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn((16, 40), dtype=torch.float16, device='cuda:0'),
    torch.randn((40,), dtype=torch.float16, device='cuda:0'),
    torch.randn((40,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
