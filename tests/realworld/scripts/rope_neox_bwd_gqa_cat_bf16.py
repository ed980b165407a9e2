# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of litGPT's CausalSelfAttention (NeoX-style rotate-half rope,
# grouped-query attention: Llama-3.2-3B's 24 query heads in 8 groups) as Thunder hands it to
# nvFuser, after llama_3_8B_rope_bwd in NVIDIA/Fuser benchmarks/python/test_rope.py but with
# a value gradient: the expanded key and value grads [B, G*R, S, D] reshaped to
# [B, G, R, S, D] and summed over the R slots with keepdim; rotate-half's backward (slices
# of g*sin padded into swapped halves, one negated, plus g*cos) on q and on the summed k;
# q, k and v cat along the slot axis to [B, G, R+2, S, D] in float, cast to bf16,
# permuted and reshaped to the fused projection's gradient [B, S, G*(R+2)*D].
# real-sizes: 16=128 13=4096 8=64 7=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 21, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 21, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 21, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T5 = fd.ops.cast(T1, dtype=DataType.Float)
    T12 = fd.ops.reshape(T5, new_shape=[1, 7, 3, 13, 16])
    T13 = fd.ops.cast(T2, dtype=DataType.Float)
    T20 = fd.ops.reshape(T13, new_shape=[1, 7, 3, 13, 16])
    T21 = fd.ops.sum(T12, dims=[2], keepdim=True, dtype=DataType.Null)
    T22 = fd.ops.sum(T20, dims=[2], keepdim=True, dtype=DataType.Null)
    T28 = fd.ops.reshape(T21, new_shape=[1, 7, 13, 16])
    T29 = fd.ops.cast(T0, dtype=DataType.Float)
    T35 = fd.ops.broadcast_in_dim(T3, shape=[1, 21, 13, 16], broadcast_dims=[2, 3])
    T36 = fd.ops.cast(T35, dtype=DataType.Float)
    T42 = fd.ops.broadcast_in_dim(T4, shape=[1, 21, 13, 16], broadcast_dims=[2, 3])
    T43 = fd.ops.cast(T42, dtype=DataType.Float)
    T44 = fd.ops.mul(T29, T43)
    T60 = fd.ops.slice(T44, start_indices=[0, 0, 0, 0], end_indices=[1, 21, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T76 = fd.ops.slice(T44, start_indices=[0, 0, 0, 8], end_indices=[1, 21, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    S77 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T87 = fd.ops.pad(T76, [0, 8, 0, 0, 0, 0, 0, 0], S77)
    T88 = fd.ops.neg(T60)
    S89 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T99 = fd.ops.pad(T88, [8, 0, 0, 0, 0, 0, 0, 0], S89)
    T100 = fd.ops.mul(T29, T36)
    T101 = fd.ops.add(T100, T87)
    T102 = fd.ops.add(T101, T99)
    T108 = fd.ops.broadcast_in_dim(T3, shape=[1, 7, 13, 16], broadcast_dims=[2, 3])
    T109 = fd.ops.cast(T108, dtype=DataType.Float)
    T115 = fd.ops.broadcast_in_dim(T4, shape=[1, 7, 13, 16], broadcast_dims=[2, 3])
    T116 = fd.ops.cast(T115, dtype=DataType.Float)
    T117 = fd.ops.mul(T28, T116)
    T133 = fd.ops.slice(T117, start_indices=[0, 0, 0, 0], end_indices=[1, 7, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T149 = fd.ops.slice(T117, start_indices=[0, 0, 0, 8], end_indices=[1, 7, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    S150 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T160 = fd.ops.pad(T149, [0, 8, 0, 0, 0, 0, 0, 0], S150)
    T161 = fd.ops.neg(T133)
    S162 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T172 = fd.ops.pad(T161, [8, 0, 0, 0, 0, 0, 0, 0], S162)
    T173 = fd.ops.mul(T28, T109)
    T174 = fd.ops.add(T173, T160)
    T175 = fd.ops.add(T174, T172)
    T182 = fd.ops.reshape(T102, new_shape=[1, 7, 3, 13, 16])
    T189 = fd.ops.reshape(T175, new_shape=[1, 7, 1, 13, 16])
    T190 = fd.ops.cat([T182, T189, T22], dim=2, manual_padding=0)
    T191 = fd.ops.cast(T190, dtype=DataType.BFloat16)
    T192 = fd.ops.permute(T191, dims=[0, 3, 1, 2, 4])
    T197 = fd.ops.reshape(T192, new_shape=[1, 13, 560])
    fd.add_output(T197)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 21, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 21, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 21, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
