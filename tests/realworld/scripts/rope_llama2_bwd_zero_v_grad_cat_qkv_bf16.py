# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on llama_2_7b_hf_rope_bwd in NVIDIA/Fuser benchmarks/python/test_rope.py (the
# backward Thunder derives for litGPT's rope on a fused qkv projection): q and k grads
# [B, H, S, D] (passed through a full-range slice, the backward of the empty-tail cat),
# g*sin cast to bf16, its halves sliced and padded back in swapped places (the lower half
# negated), added to g*cos and to an all-zero [B, H, S, D] made by padding full() of an
# empty [B, H, S, 0] tensor; q, k and a zero v grad cat along a size-1 axis to
# [B, H, 3, S, D], permuted and reshaped to the projection's [B, S, H*3*D] gradient.
# real-sizes: 16=128 13=4096 8=64 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[2, 5, 13, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 5, 13, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T8 = fd.ops.broadcast_in_dim(T0, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T24 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T30 = fd.ops.broadcast_in_dim(T8, shape=[2, 5, 13, 16], broadcast_dims=[1, 2, 3])
    T46 = fd.ops.slice(T2, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T47 = fd.ops.cast(T24, dtype=DataType.Float)
    T48 = fd.ops.cast(T30, dtype=DataType.Float)
    T49 = fd.ops.cast(T46, dtype=DataType.Float)
    T54 = fd.ops.broadcast_in_dim(T3, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T60 = fd.ops.broadcast_in_dim(T54, shape=[2, 5, 13, 16], broadcast_dims=[1, 2, 3])
    T61 = fd.ops.cast(T60, dtype=DataType.Float)
    S62 = fd.define_scalar(0, dtype=DataType.Int)
    T68 = fd.ops.full(shape=[2, 5, 13, 0], fill_value=S62, dtype=DataType.BFloat16)
    S69 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T79 = fd.ops.pad(T68, [0, 16, 0, 0, 0, 0, 0, 0], S69)
    T80 = fd.ops.cast(T79, dtype=DataType.Float)
    T81 = fd.ops.mul(T61, T47)
    T82 = fd.ops.cast(T81, dtype=DataType.BFloat16)
    T98 = fd.ops.slice(T82, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T114 = fd.ops.slice(T82, start_indices=[0, 0, 0, 8], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T115 = fd.ops.cast(T98, dtype=DataType.Float)
    T116 = fd.ops.neg(T115)
    T117 = fd.ops.cast(T116, dtype=DataType.BFloat16)
    S118 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T128 = fd.ops.pad(T117, [8, 0, 0, 0, 0, 0, 0, 0], S118)
    S129 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T139 = fd.ops.pad(T114, [0, 8, 0, 0, 0, 0, 0, 0], S129)
    T140 = fd.ops.mul(T48, T47)
    T141 = fd.ops.add(T80, T140)
    T142 = fd.ops.cast(T128, dtype=DataType.Float)
    T143 = fd.ops.add(T141, T142)
    T144 = fd.ops.cast(T139, dtype=DataType.Float)
    T145 = fd.ops.add(T143, T144)
    T146 = fd.ops.cast(T145, dtype=DataType.BFloat16)
    T147 = fd.ops.mul(T61, T49)
    T148 = fd.ops.cast(T147, dtype=DataType.BFloat16)
    T164 = fd.ops.slice(T148, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T180 = fd.ops.slice(T148, start_indices=[0, 0, 0, 8], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T181 = fd.ops.cast(T164, dtype=DataType.Float)
    T182 = fd.ops.neg(T181)
    T183 = fd.ops.cast(T182, dtype=DataType.BFloat16)
    S184 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T194 = fd.ops.pad(T183, [8, 0, 0, 0, 0, 0, 0, 0], S184)
    S195 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T205 = fd.ops.pad(T180, [0, 8, 0, 0, 0, 0, 0, 0], S195)
    T206 = fd.ops.mul(T48, T49)
    T207 = fd.ops.add(T80, T206)
    T208 = fd.ops.cast(T194, dtype=DataType.Float)
    T209 = fd.ops.add(T207, T208)
    T210 = fd.ops.cast(T205, dtype=DataType.Float)
    T211 = fd.ops.add(T209, T210)
    T212 = fd.ops.cast(T211, dtype=DataType.BFloat16)
    S213 = fd.define_scalar(0, dtype=DataType.Int)
    T220 = fd.ops.full(shape=[2, 5, 1, 13, 16], fill_value=S213, dtype=DataType.BFloat16)
    T227 = fd.ops.reshape(T146, new_shape=[2, 5, 1, 13, 16])
    T234 = fd.ops.reshape(T212, new_shape=[2, 5, 1, 13, 16])
    T235 = fd.ops.cat([T227, T234, T220], dim=2, manual_padding=0)
    T236 = fd.ops.permute(T235, dims=[0, 3, 1, 2, 4])
    T241 = fd.ops.reshape(T236, new_shape=[2, 13, 240])
    fd.add_output(T241)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 5, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 5, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
