# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a sliding-window KV cache update (Mistral-style rolling cache, HF
# SlidingWindowCache / litGPT's KVCache in a Thunder-compiled prefill chunk) as Thunder hands
# it to nvFuser: the new tokens' k and v projections [B, n, H*D] reshaped to heads and
# transposed, cat after the cached [B, H, P, D] along the sequence axis, and only the last
# window of positions kept with a slice [.., P+n-W : P+n, :].
# real-sizes: 20=128 16=4096 13=4093 11=2048 6=8 5=2048
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 6, 13, 20], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 6, 13, 20], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 3, 120], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 3, 120], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T9 = fd.ops.reshape(T2, new_shape=[1, 3, 6, 20])
    T10 = fd.ops.permute(T9, dims=[0, 2, 1, 3])
    T11 = fd.ops.cat([T0, T10], dim=2, manual_padding=0)
    T27 = fd.ops.slice(T11, start_indices=[0, 0, 5, 0], end_indices=[1, 6, 16, 20], strides=[1, 1, 1, 1], manual_normalization=0)
    T33 = fd.ops.reshape(T3, new_shape=[1, 3, 6, 20])
    T34 = fd.ops.permute(T33, dims=[0, 2, 1, 3])
    T35 = fd.ops.cat([T1, T34], dim=2, manual_padding=0)
    T51 = fd.ops.slice(T35, start_indices=[0, 0, 5, 0], end_indices=[1, 6, 16, 20], strides=[1, 1, 1, 1], manual_normalization=0)
    fd.add_output(T27)
    fd.add_output(T51)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 6, 13, 20), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 6, 13, 20), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 3, 120), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 3, 120), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
