# Seed 000 (nvFuser PRs "Support layout op in scheduler" and "moe layer with nvfp4
# grouped_mm"): an MoE expert matmul in nvfp4. The bf16 activations [M, K] are block-
# quantized; their block scales go through the layout op (PreprocessGroupedMatmulInputSf),
# which places each group's scales at its output offset in the 128x4 swizzle CUTLASS
# expects; the grouped matmul multiplies each group of rows by its expert's fp4 weights.
# M = 16 rows in G = 2 groups (rows 0-4 and 5-15), K = 64, N = 128.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float4_e2m1fn, is_cpu=False, stride_order=[2, 0, 1])
    T2 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float8_e4m3fn, is_cpu=False)
    T3 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[-1, 3], contiguity=[True, True], dtype=DataType.Int32, is_cpu=False)
    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, is_cpu=False)
    T6 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int32, is_cpu=False)
    T7, T8 = fd.ops.nv_block_quantize(T0, swizzle_scales=False, block_size=16, dtype=DataType.Float4_e2m1fn)
    T9 = fd.ops.preprocess_grouped_matmul_input_sf(T8, T5, T6)
    T10 = fd.ops.cutlass_nvfp4_grouped_mm(T7, T1, T9, T2, T3, T4, T5, T6, dtype=DataType.BFloat16)
    fd.add_output(T10)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((16, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 256, (8192,), dtype=torch.uint8, device='cuda:0').as_strided((2, 32, 128), (4096, 1, 32)).view(torch.float4_e2m1fn_x2),
    torch.testing.make_tensor((2, 128, 4), dtype=torch.float8_e4m3fn, device='cuda:0', low=0.25, high=2.0),
    torch.testing.make_tensor((2,), dtype=torch.float32, device='cuda:0', low=0.5, high=1.5),
    torch.tensor([[5, 128, 64], [11, 128, 64]], dtype=torch.int32, device='cuda:0'),
    torch.tensor([0, 5], dtype=torch.int32, device='cuda:0'),
    torch.tensor([0, 128], dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
