# Seed 004, test AutoScheduleSingleOpWithSwizzle: nvfp4 block quantization of an fp32
# [m, k] tensor whose block scales get the 128x4 swizzled allocation
# [m/128, k/64, 32, 4, 4] that CUTLASS reads (m a multiple of 128, k/16 of 4).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[256, 128], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1, T2 = fd.ops.nv_block_quantize(T0, swizzle_scales=True, block_size=16, dtype=DataType.Float4_e2m1fn)
    fd.add_output(T1)
    fd.add_output(T2)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((256, 128), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
