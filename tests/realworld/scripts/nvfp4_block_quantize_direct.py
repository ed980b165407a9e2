# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on gmm_nvfuser in NVIDIA/Fuser tests/python/multidevice/test_moe.py (the nvfp4
# activation quantization Thunder emits before cutlass_nvfp4_grouped_mm, nvfuser_direct
# spelling): reshape to [M, K/16, 16] with a plain list, abs, a block max with a positional
# dim, division by the e2m1 max as a Python float, the scale clamped to [fp8 tiny, 448],
# fd.ops.broadcast with a bool list, the scaled values clamped and cast to Float4_e2m1fn,
# the block scales cast to Float8_e4m3fn.
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.ops.reshape(tv0, [32, 8, 16])
    tv2 = fd.ops.abs(tv1)
    tv3 = fd.ops.max(tv2, 2)
    tv4 = fd.ops.div(tv3, 6.0)
    tv5 = fd.ops.clamp(tv4, 0.015625, 448.0)
    tv6 = fd.ops.broadcast(tv5, [False, False, True])
    tv7 = fd.ops.div(tv1, tv6)
    tv8 = fd.ops.clamp(tv7, -448.0, 448.0)
    tv9 = fd.ops.reshape(tv8, [32, 128])
    tv10 = fd.ops.cast(tv9, DataType.Float4_e2m1fn)
    tv11 = fd.ops.cast(tv5, DataType.Float8_e4m3fn)
    fd.add_output(tv10)
    fd.add_output(tv11)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.randn((32, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
