# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the qkv split of Megatron/ViT-style attention (qkv.reshape(B, S, 3, H, D)
# .permute(2, 0, 3, 1, 4).unbind(0)) as Thunder hands it to nvFuser, the unbind written as
# slice + squeeze (cf. NVIDIA/Fuser tests/python/direct/test_high_complexity.py
# test_nanogpt_split_mha_linears for the split-by-slice variant): the fused bf16 projection
# [B, S, 3*H*D] ([16, 4096, 12288] in the real model) reshaped to [B, S, 3, H, D], permuted
# to [3, B, H, S, D], and each of q, k, v sliced out of the leading axis and squeezed to
# [B, H, S, D] ([16, 32, 4096, 128]), returned as views with no arithmetic.
# real-sizes: 16=128 13=4096 5=32 4=16
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[4, 13, 240], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T7 = fd.ops.reshape(T0, new_shape=[4, 13, 3, 5, 16])
    T8 = fd.ops.permute(T7, dims=[2, 0, 3, 1, 4])
    T27 = fd.ops.slice(T8, start_indices=[0, 0, 0, 0, 0], end_indices=[1, 4, 5, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T28 = fd.ops.squeeze(T27, dims=[0])
    T47 = fd.ops.slice(T8, start_indices=[1, 0, 0, 0, 0], end_indices=[2, 4, 5, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T48 = fd.ops.squeeze(T47, dims=[0])
    T67 = fd.ops.slice(T8, start_indices=[2, 0, 0, 0, 0], end_indices=[3, 4, 5, 13, 16], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T68 = fd.ops.squeeze(T67, dims=[0])
    fd.add_output(T28)
    fd.add_output(T48)
    fd.add_output(T68)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((4, 13, 240), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
