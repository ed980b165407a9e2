# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Llama 4's attention temperature tuning for its NoPE layers (HF Llama4TextAttention:
# attn_scales = log(floor((cache_position + 1) / floor_scale) + 1) * attn_scale + 1, floor_scale
# 8192, attn_scale 0.1) as Thunder hands it to nvFuser: int64 positions to float, floor, log,
# broadcast over heads and head_dim and multiplied into the bf16 query [B, S, H, D] in float
# (Llama 4 Scout: 40 heads of 128, a 16384-token prefill that crosses two floor steps).
# real-sizes: 11=16384 5=40
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id9(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 11, 5, 128], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[11], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T1, dtype=DataType.Float)
    S3 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T4 = fd.ops.add(T2, S3)
    S5 = fd.define_scalar(8192.00, dtype=DataType.Double)
    T6 = fd.ops.div(T4, S5)
    T7 = fd.ops.floor(T6)
    S8 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T9 = fd.ops.add(T7, S8)
    T10 = fd.ops.log(T9)
    S11 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T12 = fd.ops.mul(T10, S11)
    S13 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T14 = fd.ops.add(T12, S13)
    T15 = fd.ops.broadcast_in_dim(T14, shape=[1, 11, 1, 1], broadcast_dims=[1])
    T16 = fd.ops.broadcast_in_dim(T15, shape=[1, 11, 5, 128], broadcast_dims=[0, 1, 2, 3])
    T17 = fd.ops.cast(T0, dtype=DataType.Float)
    T18 = fd.ops.mul(T17, T16)
    T19 = fd.ops.cast(T18, dtype=DataType.BFloat16)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id9(fd)

inputs = [
    torch.testing.make_tensor((1, 11, 5, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.arange(16380, 16391, dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
