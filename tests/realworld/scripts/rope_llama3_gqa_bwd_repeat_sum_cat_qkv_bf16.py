# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on llama_3_8B_rope_bwd in NVIDIA/Fuser benchmarks/python/test_rope.py (Thunder's
# backward of litGPT's grouped-query rope): q and k grads [B, G*R, S, D]; rotate-half's
# backward as slices of g*sin padded into swapped halves plus g*cos and a padded empty
# tensor; the key grad reshaped to [B, G, R, S, D] and summed over the R query slots (the
# backward of the expand), broadcast back to [B, G, 1, S, D]; q, k and a zero value grad cat
# along the group-slot axis to [B, G, R+2, S, D], permuted and reshaped to the fused
# projection's [B, S, G*(R+2)*D] gradient.
# real-sizes: 16=128 13=4096 8=64 7=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[2, 28, 13, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 28, 13, 16], contiguity=[True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T8 = fd.ops.broadcast_in_dim(T0, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T24 = fd.ops.slice(T1, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T30 = fd.ops.broadcast_in_dim(T8, shape=[2, 28, 13, 16], broadcast_dims=[1, 2, 3])
    T31 = fd.ops.cast(T24, dtype=DataType.Float)
    T32 = fd.ops.cast(T30, dtype=DataType.Float)
    T37 = fd.ops.broadcast_in_dim(T3, shape=[1, 13, 16], broadcast_dims=[1, 2])
    T43 = fd.ops.broadcast_in_dim(T37, shape=[2, 28, 13, 16], broadcast_dims=[1, 2, 3])
    T44 = fd.ops.cast(T43, dtype=DataType.Float)
    T60 = fd.ops.slice(T2, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T61 = fd.ops.cast(T60, dtype=DataType.Float)
    S62 = fd.define_scalar(0, dtype=DataType.Int)
    T68 = fd.ops.full(shape=[2, 28, 13, 0], fill_value=S62, dtype=DataType.BFloat16)
    S69 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T79 = fd.ops.pad(T68, [0, 16, 0, 0, 0, 0, 0, 0], S69)
    T80 = fd.ops.cast(T79, dtype=DataType.Float)
    T81 = fd.ops.mul(T44, T31)
    T82 = fd.ops.cast(T81, dtype=DataType.BFloat16)
    T98 = fd.ops.slice(T82, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T114 = fd.ops.slice(T82, start_indices=[0, 0, 0, 8], end_indices=[2, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T115 = fd.ops.cast(T98, dtype=DataType.Float)
    T116 = fd.ops.neg(T115)
    T117 = fd.ops.cast(T116, dtype=DataType.BFloat16)
    S118 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T128 = fd.ops.pad(T117, [8, 0, 0, 0, 0, 0, 0, 0], S118)
    S129 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T139 = fd.ops.pad(T114, [0, 8, 0, 0, 0, 0, 0, 0], S129)
    T140 = fd.ops.mul(T32, T31)
    T141 = fd.ops.add(T80, T140)
    T142 = fd.ops.cast(T128, dtype=DataType.Float)
    T143 = fd.ops.add(T141, T142)
    T144 = fd.ops.cast(T139, dtype=DataType.Float)
    T145 = fd.ops.add(T143, T144)
    T146 = fd.ops.cast(T145, dtype=DataType.BFloat16)
    T147 = fd.ops.mul(T44, T61)
    T148 = fd.ops.cast(T147, dtype=DataType.BFloat16)
    T164 = fd.ops.slice(T148, start_indices=[0, 0, 0, 0], end_indices=[2, 28, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T180 = fd.ops.slice(T148, start_indices=[0, 0, 0, 8], end_indices=[2, 28, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T181 = fd.ops.cast(T164, dtype=DataType.Float)
    T182 = fd.ops.neg(T181)
    T183 = fd.ops.cast(T182, dtype=DataType.BFloat16)
    S184 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T194 = fd.ops.pad(T183, [8, 0, 0, 0, 0, 0, 0, 0], S184)
    S195 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T205 = fd.ops.pad(T180, [0, 8, 0, 0, 0, 0, 0, 0], S195)
    T206 = fd.ops.mul(T32, T61)
    T207 = fd.ops.add(T80, T206)
    T208 = fd.ops.cast(T194, dtype=DataType.Float)
    T209 = fd.ops.add(T207, T208)
    T210 = fd.ops.cast(T205, dtype=DataType.Float)
    T211 = fd.ops.add(T209, T210)
    T212 = fd.ops.cast(T211, dtype=DataType.BFloat16)
    T219 = fd.ops.reshape(T212, new_shape=[2, 7, 4, 13, 16])
    T220 = fd.ops.cast(T219, dtype=DataType.Float)
    T221 = fd.ops.sum(T220, dims=[2], keepdim=False, dtype=DataType.Null)
    T222 = fd.ops.cast(T221, dtype=DataType.BFloat16)
    T229 = fd.ops.broadcast_in_dim(T222, shape=[2, 7, 1, 13, 16], broadcast_dims=[0, 1, 3, 4])
    S230 = fd.define_scalar(0, dtype=DataType.Int)
    T237 = fd.ops.full(shape=[2, 7, 1, 13, 16], fill_value=S230, dtype=DataType.BFloat16)
    T244 = fd.ops.reshape(T146, new_shape=[2, 7, 4, 13, 16])
    T245 = fd.ops.cat([T244, T229, T237], dim=2, manual_padding=0)
    T246 = fd.ops.permute(T245, dims=[0, 3, 1, 2, 4])
    T251 = fd.ops.reshape(T246, new_shape=[2, 13, 672])
    fd.add_output(T251)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 28, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 28, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
