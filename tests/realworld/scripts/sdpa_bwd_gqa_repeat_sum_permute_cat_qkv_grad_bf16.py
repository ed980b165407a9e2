# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's nvFuser SDPA backward (Lightning-AI/lightning-thunder PR #951) for
# grouped-query attention, as in NVIDIA/Fuser benchmarks/python/test_rope.py's
# llama_3_8B_rope_bwd neighbourhood: fd.ops.sdpfa_bwd on the repeated (expanded) keys and
# values with the saved output, float log-sum-exp and 0-dim CPU philox seed/offset, causal
# with a scale; the key and value grads reshaped to [B, Hkv, R, S, D] and summed over the R
# repeats in float, every grad transposed back to [B, S, H, D], flattened and cat along the
# last axis into the fused [B, S, (Hq + 2*Hkv)*D] projection gradient.
# real-sizes: 16=128 13=2048 12=32 3=8
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 12, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 12, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 12, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[1, 12, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.define_tensor(shape=[1, 12, 13, 16], contiguity=[None, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[3, 2, 1, 0])
    T5 = fd.define_tensor(shape=[1, 12, 13], contiguity=[None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T6 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Int, is_cpu=True, stride_order=[])
    T7 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Int, is_cpu=True, stride_order=[])
    S8 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S9 = fd.define_scalar(True, dtype=DataType.Bool)
    S10 = fd.define_scalar(0.25000, dtype=DataType.Double)
    T11, T12, T13 = fd.ops.sdpfa_bwd(T0, T1, T2, T3, T4, T5, S8, S9, T6, T7, S10)
    T14 = fd.ops.cast(T12, dtype=DataType.Float)
    T21 = fd.ops.reshape(T14, new_shape=[1, 3, 4, 13, 16])
    T22 = fd.ops.sum(T21, dims=[2], keepdim=False, dtype=DataType.Null)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    T24 = fd.ops.cast(T13, dtype=DataType.Float)
    T31 = fd.ops.reshape(T24, new_shape=[1, 3, 4, 13, 16])
    T32 = fd.ops.sum(T31, dims=[2], keepdim=False, dtype=DataType.Null)
    T33 = fd.ops.cast(T32, dtype=DataType.BFloat16)
    T34 = fd.ops.permute(T11, dims=[0, 2, 1, 3])
    T39 = fd.ops.reshape(T34, new_shape=[1, 13, 192])
    T40 = fd.ops.permute(T23, dims=[0, 2, 1, 3])
    T45 = fd.ops.reshape(T40, new_shape=[1, 13, 48])
    T46 = fd.ops.permute(T33, dims=[0, 2, 1, 3])
    T51 = fd.ops.reshape(T46, new_shape=[1, 13, 48])
    T52 = fd.ops.cat([T39, T45, T51], dim=2, manual_padding=0)
    fd.add_output(T52)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 12, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 12, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 12, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 12, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 12, 13, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1, 12, 13), dtype=torch.float32, device='cuda:0'),
    torch.tensor(8051),
    torch.tensor(0),
]
fd.execute(inputs)
