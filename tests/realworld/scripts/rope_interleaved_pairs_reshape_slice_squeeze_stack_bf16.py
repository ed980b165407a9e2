# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the real-valued form of Meta Llama's apply_rotary_emb (interleaved, GPT-J
# style pairs: x.float().reshape(*x.shape[:-1], -1, 2) instead of view_as_complex) as
# Thunder hands it to nvFuser (cf. NVIDIA/Fuser test_repro.py test_reshape_cancellation):
# q [B, S, H, D] cast to float and reshaped to [B, S, H, D/2, 2], the even and odd
# elements sliced out of the pair axis and squeezed, the complex product with cos/sin
# [S, D/2] written out (re*cos - im*sin, re*sin + im*cos), the two results stacked back
# with a trailing size-1 broadcast and cat, reshaped to [B, S, H, D], cast to bf16 and
# transposed to [B, H, S, D].
# real-sizes: 16=128 13=2048 8=64 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 5, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[13, 8], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T10 = fd.ops.reshape(T3, new_shape=[1, 13, 5, 8, 2])
    T29 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0, 0], end_indices=[1, 13, 5, 8, 1], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T48 = fd.ops.slice(T10, start_indices=[0, 0, 0, 0, 1], end_indices=[1, 13, 5, 8, 2], strides=[1, 1, 1, 1, 1], manual_normalization=0)
    T49 = fd.ops.squeeze(T29, dims=[4])
    T50 = fd.ops.squeeze(T48, dims=[4])
    T56 = fd.ops.broadcast_in_dim(T1, shape=[1, 13, 5, 8], broadcast_dims=[1, 3])
    T57 = fd.ops.cast(T56, dtype=DataType.Float)
    T63 = fd.ops.broadcast_in_dim(T2, shape=[1, 13, 5, 8], broadcast_dims=[1, 3])
    T64 = fd.ops.cast(T63, dtype=DataType.Float)
    T65 = fd.ops.mul(T49, T57)
    T66 = fd.ops.mul(T50, T64)
    T67 = fd.ops.sub(T65, T66)
    T68 = fd.ops.mul(T49, T64)
    T69 = fd.ops.mul(T50, T57)
    T70 = fd.ops.add(T68, T69)
    T77 = fd.ops.broadcast_in_dim(T67, shape=[1, 13, 5, 8, 1], broadcast_dims=[0, 1, 2, 3])
    T84 = fd.ops.broadcast_in_dim(T70, shape=[1, 13, 5, 8, 1], broadcast_dims=[0, 1, 2, 3])
    T85 = fd.ops.cat([T77, T84], dim=-1, manual_padding=0)
    T91 = fd.ops.reshape(T85, new_shape=[1, 13, 5, 16])
    T92 = fd.ops.cast(T91, dtype=DataType.BFloat16)
    T93 = fd.ops.permute(T92, dims=[0, 2, 1, 3])
    fd.add_output(T93)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 5, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 8), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
