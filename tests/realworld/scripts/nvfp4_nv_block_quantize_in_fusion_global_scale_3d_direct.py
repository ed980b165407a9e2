# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/test_narrow_precision.py
# (test_nv_block_quantization_vs_te: nv_block_quantize with a 0-dim global scale, positional
# arguments) with the global scale computed in the same fusion, as Transformer Engine's
# nvfp4 recipe defines it (compute_nvfp4_global_scale: 448 * 6 / amax): a bf16 activation
# [B, S, H] flattened to [B*S, H], its float amax over everything, 2688 / amax as the 0-dim
# global scale, fd.ops.nv_block_quantize(x, gs, False, 16) giving Float4_e2m1fn values and
# e4m3 block scales [B*S, H/16]; the global scale is returned too.
# real-sizes: 48=4096 13=2048
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[2, 13, 48], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.ops.reshape(tv0, [26, 48])
    tv2 = fd.ops.cast(tv1, DataType.Float)
    tv3 = fd.ops.abs(tv2)
    tv4 = fd.ops.max(tv3, [0, 1])
    tv5 = fd.ops.div(2688.000, tv4)
    tv6, tv7 = fd.ops.nv_block_quantize(tv1, tv5, False, 16)
    fd.add_output(tv6)
    fd.add_output(tv7)
    fd.add_output(tv5)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 48), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
