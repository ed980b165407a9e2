# Seed 004 (nvFuser PR "Extend pointwise scheduler to block quantization"): nvfp4 block
# quantization of a bf16 [m, k] tensor with a global scale. Outputs: fp4 values [m, k]
# (torch: packed float4_e2m1fn_x2 [m, k/2]) and e4m3 block scales [m, k/16], both fusion
# outputs, as the pointwise scheduler requires of the block scales.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T2, T3 = fd.ops.nv_block_quantize(T0, global_scale=T1, swizzle_scales=False, block_size=16, dtype=DataType.Float4_e2m1fn)
    fd.add_output(T2)
    fd.add_output(T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((32, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.full((), 200.0, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
