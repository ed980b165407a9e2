# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the attention epilogue Thunder sends to nvFuser when linears are fused
# (nv_enable_linear; cf. NVIDIA/Fuser tests/python/llama_inf_tests/graph_2.py and issue
# #3801's cat/slice/linear fusions): the SDPA output [B, H, S, D] held in [B, S, H, D]
# memory (stride_order [3, 1, 2, 0]) permuted to [B, S, H, D] and reshaped to
# [B, S, H*D], the output projection as fd.ops.linear with a bias, and the residual added in
# float; the flattened attention output is returned too (saved for the backward).
# real-sizes: 16=128 13=2048 5=32 80=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 5, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T1 = fd.define_tensor(shape=[80, 80], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[80], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[1, 13, 80], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T9 = fd.ops.reshape(T4, new_shape=[1, 13, 80])
    T10 = fd.ops.linear(T9, T1, T2)
    T11 = fd.ops.cast(T10, dtype=DataType.Float)
    T12 = fd.ops.cast(T3, dtype=DataType.Float)
    T13 = fd.ops.add(T11, T12)
    T14 = fd.ops.cast(T13, dtype=DataType.BFloat16)
    fd.add_output(T14)
    fd.add_output(T9)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn((1040,), dtype=torch.bfloat16, device='cuda:0').as_strided((1, 5, 13, 16), (1040, 16, 80, 1)),
    torch.testing.make_tensor((80, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((80,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 80), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
