# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on AlphaFold3's sequence-local atom attention (AtomTransformer: queries in blocks
# of 32 atoms attending to 128-atom key windows, over several diffusion samples; cf. the
# nvfuser_direct triangle attention of NVIDIA/Fuser tests/python/direct/test_alphafold3.py,
# whose bool mask is broadcast to [b, i, 1, 1, k]) with the softmax written out: float
# logits [B, n_sample, n_block, H, 32, 128] scaled, plus a bf16 pair bias broadcast over the
# samples, a bool mask [B, n_block, 32, 128] broadcast_in_dim to 6-D [B, 1, n_block, 1, 32,
# 128] and on to the logits' shape, where(mask, x, -1e9), softmax, then where(mask, p, 0).
# real-sizes: 3=5 5=64 8=32 16=128
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 3, 5, 4, 8, 16], contiguity=[None, True, True, True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[5, 4, 3, 2, 1, 0])
    T1 = fd.define_tensor(shape=[1, 5, 4, 8, 16], contiguity=[None, True, True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[4, 3, 2, 1, 0])
    T2 = fd.define_tensor(shape=[1, 5, 8, 16], contiguity=[None, True, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    S3 = fd.define_scalar(0.17678, dtype=DataType.Double)
    T4 = fd.ops.mul(T0, S3)
    T12 = fd.ops.broadcast_in_dim(T1, shape=[1, 3, 5, 4, 8, 16], broadcast_dims=[0, 2, 3, 4, 5])
    T13 = fd.ops.cast(T12, dtype=DataType.Float)
    T14 = fd.ops.add(T4, T13)
    T22 = fd.ops.broadcast_in_dim(T2, shape=[1, 1, 5, 1, 8, 16], broadcast_dims=[0, 2, 4, 5])
    T30 = fd.ops.broadcast_in_dim(T22, shape=[1, 3, 5, 4, 8, 16], broadcast_dims=[0, 1, 2, 3, 4, 5])
    S31 = fd.define_scalar(-1.00000e+09, dtype=DataType.Double)
    T32 = fd.ops.where(T30, T14, S31)
    T33 = fd.ops.max(T32, dims=[5], keepdim=False, dtype=DataType.Null)
    T41 = fd.ops.broadcast_in_dim(T33, shape=[1, 3, 5, 4, 8, 1], broadcast_dims=[0, 1, 2, 3, 4])
    T49 = fd.ops.broadcast_in_dim(T41, shape=[1, 3, 5, 4, 8, 16], broadcast_dims=[0, 1, 2, 3, 4, 5])
    T50 = fd.ops.sub(T32, T49)
    T51 = fd.ops.exp(T50)
    T52 = fd.ops.sum(T51, dims=[5], keepdim=False, dtype=DataType.Null)
    T60 = fd.ops.broadcast_in_dim(T52, shape=[1, 3, 5, 4, 8, 1], broadcast_dims=[0, 1, 2, 3, 4])
    T68 = fd.ops.broadcast_in_dim(T60, shape=[1, 3, 5, 4, 8, 16], broadcast_dims=[0, 1, 2, 3, 4, 5])
    T69 = fd.ops.div(T51, T68)
    S70 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T71 = fd.ops.where(T30, T69, S70)
    T72 = fd.ops.cast(T71, dtype=DataType.BFloat16)
    fd.add_output(T72)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((1, 3, 5, 4, 8, 16), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((1, 5, 4, 8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.rand((1, 5, 8, 16), device='cuda:0') < 0.8,
]
fd.execute(inputs)
