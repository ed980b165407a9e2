# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hf_phi3_rope_bwd in NVIDIA/Fuser benchmarks/python/test_rope.py (Thunder's
# backward of HF Phi-3's rope on a fused qkv projection): cos and sin arrive as the
# forward's expanded [B, H, S, D] tensors, stride 0 on batch and heads (strides
# (0, 0, D, 1), contiguity [None, None, True, True]); rotate-half's backward as slices of
# g*sin, the lower half negated, padded into swapped halves, plus g*cos; the q, k and v
# grads transposed back, flattened to [B, S, H*D] and padded into their thirds of the
# [B, S, 3*H*D] projection gradient (the backward of the three slices), then summed.
# real-sizes: 12=96 13=2048 6=48 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 5, 13, 12], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 5, 13, 12], contiguity=[None, None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 5, 13, 12], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[2, 5, 13, 12], contiguity=[None, None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.define_tensor(shape=[2, 5, 13, 12], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.cast(T3, dtype=DataType.Float)
    T7 = fd.ops.cast(T2, dtype=DataType.Float)
    T8 = fd.ops.mul(T6, T5)
    T9 = fd.ops.cast(T8, dtype=DataType.BFloat16)
    T10 = fd.ops.mul(T6, T7)
    T11 = fd.ops.cast(T10, dtype=DataType.BFloat16)
    T27 = fd.ops.slice(T9, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 6], strides=[1, 1, 1, 1], manual_normalization=0)
    T43 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 6], strides=[1, 1, 1, 1], manual_normalization=0)
    T44 = fd.ops.cast(T27, dtype=DataType.Float)
    T45 = fd.ops.neg(T44)
    T46 = fd.ops.cast(T43, dtype=DataType.Float)
    T47 = fd.ops.neg(T46)
    T63 = fd.ops.slice(T9, start_indices=[0, 0, 0, 6], end_indices=[2, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T64 = fd.ops.cast(T45, dtype=DataType.BFloat16)
    T80 = fd.ops.slice(T11, start_indices=[0, 0, 0, 6], end_indices=[2, 5, 13, 12], strides=[1, 1, 1, 1], manual_normalization=0)
    T81 = fd.ops.cast(T47, dtype=DataType.BFloat16)
    S82 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T92 = fd.ops.pad(T63, [0, 6, 0, 0, 0, 0, 0, 0], S82)
    S93 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T103 = fd.ops.pad(T64, [6, 0, 0, 0, 0, 0, 0, 0], S93)
    S104 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T114 = fd.ops.pad(T80, [0, 6, 0, 0, 0, 0, 0, 0], S104)
    S115 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T125 = fd.ops.pad(T81, [6, 0, 0, 0, 0, 0, 0, 0], S115)
    T126 = fd.ops.cast(T1, dtype=DataType.Float)
    T127 = fd.ops.cast(T103, dtype=DataType.Float)
    T128 = fd.ops.cast(T92, dtype=DataType.Float)
    T129 = fd.ops.add(T127, T128)
    T130 = fd.ops.mul(T126, T5)
    T131 = fd.ops.cast(T125, dtype=DataType.Float)
    T132 = fd.ops.cast(T114, dtype=DataType.Float)
    T133 = fd.ops.add(T131, T132)
    T134 = fd.ops.mul(T126, T7)
    T135 = fd.ops.add(T129, T130)
    T136 = fd.ops.cast(T135, dtype=DataType.BFloat16)
    T137 = fd.ops.add(T133, T134)
    T138 = fd.ops.cast(T137, dtype=DataType.BFloat16)
    T139 = fd.ops.permute(T136, dims=[0, 2, 1, 3])
    T144 = fd.ops.reshape(T139, new_shape=[2, 13, 60])
    T145 = fd.ops.permute(T4, dims=[0, 2, 1, 3])
    T150 = fd.ops.reshape(T145, new_shape=[2, 13, 60])
    T151 = fd.ops.permute(T138, dims=[0, 2, 1, 3])
    T156 = fd.ops.reshape(T151, new_shape=[2, 13, 60])
    S157 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T165 = fd.ops.pad(T144, [60, 60, 0, 0, 0, 0], S157)
    S166 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T174 = fd.ops.pad(T150, [120, 0, 0, 0, 0, 0], S166)
    S175 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T183 = fd.ops.pad(T156, [0, 120, 0, 0, 0, 0], S175)
    T184 = fd.ops.cast(T174, dtype=DataType.Float)
    T185 = fd.ops.cast(T165, dtype=DataType.Float)
    T186 = fd.ops.add(T184, T185)
    T187 = fd.ops.cast(T183, dtype=DataType.Float)
    T188 = fd.ops.add(T186, T187)
    T189 = fd.ops.cast(T188, dtype=DataType.BFloat16)
    fd.add_output(T189)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 5, 13, 12), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((156,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 5, 13, 12), (0, 0, 12, 1)),
    torch.testing.make_tensor((2, 5, 13, 12), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((156,), dtype=torch.bfloat16, device='cuda:0').as_strided((2, 5, 13, 12), (0, 0, 12, 1)),
    torch.testing.make_tensor((2, 5, 13, 12), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
