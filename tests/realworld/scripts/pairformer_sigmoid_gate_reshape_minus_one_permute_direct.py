# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the output gating of triangle attention in NVIDIA/Fuser
# tests/python/direct/test_alphafold3.py (nvfuser_direct, hand-written with positional
# arguments and reshape sizes of -1): the gate projection [b, i, j, h*c] through a float
# sigmoid, reshaped to [b, i, j, h, -1] and permuted to [b, i, h, j, c] to multiply the
# attention output, cast to bf16, permuted back to [b, i, j, h, c], flattened with
# reshape(.., [b, i, j, -1]) and given a row-major layout by fd.ops.stride_order.
# real-sizes: 7=384 8=32
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[1, 7, 4, 7, 8], contiguity=[None, True, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.define_tensor(shape=[1, 7, 7, 32], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv2 = fd.ops.cast(tv1, DataType.Float)
    tv3 = fd.ops.sigmoid(tv2)
    tv4 = fd.ops.reshape(tv3, [1, 7, 7, 4, -1])
    tv5 = fd.ops.permute(tv4, [0, 1, 3, 2, 4])
    tv6 = fd.ops.cast(tv0, DataType.Float)
    tv7 = fd.ops.mul(tv6, tv5)
    tv8 = fd.ops.cast(tv7, DataType.BFloat16)
    tv9 = fd.ops.permute(tv8, [0, 1, 3, 2, 4])
    tv10 = fd.ops.reshape(tv9, [1, 7, 7, -1])
    tv11 = fd.ops.stride_order(tv10, stride_order=[3, 2, 1, 0])
    fd.add_output(tv11)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((1, 7, 4, 7, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 7, 7, 32), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
