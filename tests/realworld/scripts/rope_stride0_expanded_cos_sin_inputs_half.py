# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on rotary-embedding fusions whose cos/sin arrive already expanded, as in
# NVIDIA/Fuser benchmarks/python/test_rope.py (hf_phi3_rope_bwd's inputs made with
# as_strided(.., (0, 0, 96, 1))) and issue #1277: fp16 q and k [B, H, S, D] and cos/sin
# [B, H, S, D] views of one [S, D] table with stride 0 over batch and heads (contiguity
# [None, None, True, True]); rotate-half done in float (slices, neg, cat), q*cos +
# rotate_half(q)*sin, fp16 out.
# real-sizes: 16=128 13=4096 8=64 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 5, 13, 16], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 5, 13, 16], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 5, 13, 16], contiguity=[None, None, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T3 = fd.define_tensor(shape=[2, 5, 13, 16], contiguity=[None, None, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.ops.cast(T2, dtype=DataType.Float)
    T5 = fd.ops.cast(T3, dtype=DataType.Float)
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    T22 = fd.ops.slice(T6, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T38 = fd.ops.slice(T6, start_indices=[0, 0, 0, 8], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T39 = fd.ops.neg(T38)
    T40 = fd.ops.cat([T39, T22], dim=-1, manual_padding=0)
    T41 = fd.ops.mul(T6, T4)
    T42 = fd.ops.mul(T40, T5)
    T43 = fd.ops.add(T41, T42)
    T44 = fd.ops.cast(T43, dtype=DataType.Half)
    T45 = fd.ops.cast(T1, dtype=DataType.Float)
    T61 = fd.ops.slice(T45, start_indices=[0, 0, 0, 0], end_indices=[2, 5, 13, 8], strides=[1, 1, 1, 1], manual_normalization=0)
    T77 = fd.ops.slice(T45, start_indices=[0, 0, 0, 8], end_indices=[2, 5, 13, 16], strides=[1, 1, 1, 1], manual_normalization=0)
    T78 = fd.ops.neg(T77)
    T79 = fd.ops.cat([T78, T61], dim=-1, manual_padding=0)
    T80 = fd.ops.mul(T45, T4)
    T81 = fd.ops.mul(T79, T5)
    T82 = fd.ops.add(T80, T81)
    T83 = fd.ops.cast(T82, dtype=DataType.Half)
    fd.add_output(T44)
    fd.add_output(T83)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 5, 13, 16), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((2, 5, 13, 16), dtype=torch.float16, device='cuda:0'),
    torch.randn((208,), dtype=torch.float16, device='cuda:0').as_strided((2, 5, 13, 16), (0, 0, 16, 1)),
    torch.randn((208,), dtype=torch.float16, device='cuda:0').as_strided((2, 5, 13, 16), (0, 0, 16, 1)),
]
fd.execute(inputs)
