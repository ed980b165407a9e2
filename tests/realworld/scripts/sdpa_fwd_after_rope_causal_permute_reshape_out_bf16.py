# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's nvFuser SDPA path (Lightning-AI/lightning-thunder PR #951;
# NVIDIA/Fuser tests/python/test_sdpa.py) fused with its neighbours in a Llama-style block:
# q, k, v projections reshaped to heads and transposed, rotate-half rope on q and k with
# cos/sin [S, D], fd.ops.sdpfa_fwd with dropout 0, is_causal and a scale, the attention
# output permuted and flattened to [B, S, H*D] for the output projection; the rotated q/k,
# the output, the log-sum-exp and the philox seed/offset are returned for the backward.
# real-sizes: 16=128 13=2048 8=64 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 13, 80], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 13, 80], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 13, 80], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[13, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T10 = fd.ops.reshape(T0, new_shape=[1, 13, 5, 16])
    T11 = fd.ops.permute(T10, dims=[0, 2, 1, 3])
    T17 = fd.ops.reshape(T1, new_shape=[1, 13, 5, 16])
    T18 = fd.ops.permute(T17, dims=[0, 2, 1, 3])
    T24 = fd.ops.reshape(T2, new_shape=[1, 13, 5, 16])
    T25 = fd.ops.permute(T24, dims=[0, 2, 1, 3])
    T31 = fd.ops.broadcast_in_dim(T3, shape=[1, 5, 13, 16], broadcast_dims=[2, 3])
    T32 = fd.ops.cast(T31, dtype=DataType.Float)
    T38 = fd.ops.broadcast_in_dim(T4, shape=[1, 5, 13, 16], broadcast_dims=[2, 3])
    T39 = fd.ops.cast(T38, dtype=DataType.Float)
    T55 = fd.ops.slice(T11, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T71 = fd.ops.slice(T11, start_indices=[0, 0, 0, 8], end_indices=[1, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T72 = fd.ops.cast(T71, dtype=DataType.Float)
    T73 = fd.ops.neg(T72)
    T74 = fd.ops.cast(T73, dtype=DataType.BFloat16)
    T75 = fd.ops.cat([T74, T55], dim=-1, manual_padding=0)
    T76 = fd.ops.cast(T11, dtype=DataType.Float)
    T77 = fd.ops.mul(T76, T32)
    T78 = fd.ops.cast(T75, dtype=DataType.Float)
    T79 = fd.ops.mul(T78, T39)
    T80 = fd.ops.add(T77, T79)
    T81 = fd.ops.cast(T80, dtype=DataType.BFloat16)
    T97 = fd.ops.slice(T18, start_indices=[0, 0, 0, 0], end_indices=[1, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T113 = fd.ops.slice(T18, start_indices=[0, 0, 0, 8], end_indices=[1, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T114 = fd.ops.cast(T113, dtype=DataType.Float)
    T115 = fd.ops.neg(T114)
    T116 = fd.ops.cast(T115, dtype=DataType.BFloat16)
    T117 = fd.ops.cat([T116, T97], dim=-1, manual_padding=0)
    T118 = fd.ops.cast(T18, dtype=DataType.Float)
    T119 = fd.ops.mul(T118, T32)
    T120 = fd.ops.cast(T117, dtype=DataType.Float)
    T121 = fd.ops.mul(T120, T39)
    T122 = fd.ops.add(T119, T121)
    T123 = fd.ops.cast(T122, dtype=DataType.BFloat16)
    S124 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S125 = fd.define_scalar(True, dtype=DataType.Bool)
    S126 = fd.define_scalar(0.25000, dtype=DataType.Double)
    T127, T128, T129, T130 = fd.ops.sdpfa_fwd(T81, T123, T25, dropout_p=S124, is_causal=S125, scale=S126)
    T131 = fd.ops.permute(T127, dims=[0, 2, 1, 3])
    T136 = fd.ops.reshape(T131, new_shape=[1, 13, 80])
    fd.add_output(T136)
    fd.add_output(T81)
    fd.add_output(T123)
    fd.add_output(T127)
    fd.add_output(T128)
    fd.add_output(T129)
    fd.add_output(T130)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 13, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 13, 80), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((13, 16), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
