# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the head of NVIDIA/Fuser tests/python/llama_inf_tests/graph_2.py (Llama's
# attention output after SDPA, from Thunder): a [1, H, S, D] bf16 tensor whose memory is
# [1, S, H, D] (stride_order=[3, 1, 2, 0], an as_strided input), permute to [1, S, H, D],
# stride_order to row-major, reshape to [1, S, H*D], the residual add in float; plus the
# backward direction: a [1, S, H*D] gradient reshaped to heads and transposed back.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 8, 6, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 1, 2, 0])
    T1 = fd.define_tensor(shape=[1, 6, 128], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 6, 128], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.ops.permute(T0, dims=[0, 2, 1, 3])
    T4 = fd.ops.stride_order(T3, stride_order=[3, 2, 1, 0])
    T5 = fd.ops.reshape(T4, new_shape=[1, 6, 128])
    T6 = fd.ops.stride_order(T5, stride_order=[2, 1, 0])
    T7 = fd.ops.cast(T1, dtype=DataType.Float)
    T8 = fd.ops.cast(T6, dtype=DataType.Float)
    T9 = fd.ops.add(T7, T8)
    T10 = fd.ops.cast(T9, dtype=DataType.BFloat16)
    T11 = fd.ops.reshape(T2, new_shape=[1, 6, 8, 16])
    T12 = fd.ops.permute(T11, dims=[0, 2, 1, 3])
    T13 = fd.ops.stride_order(T12, stride_order=[3, 2, 1, 0])
    fd.add_output(T10)
    fd.add_output(T6)
    fd.add_output(T13)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randn(768, dtype=torch.bfloat16, device='cuda:0').as_strided((1, 8, 6, 16), (768, 16, 128, 1)),
    torch.testing.make_tensor((1, 6, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 6, 128), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
