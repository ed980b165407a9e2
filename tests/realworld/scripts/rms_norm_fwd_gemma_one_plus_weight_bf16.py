# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of HF GemmaRMSNorm (Gemma-7B, hidden 3072, eps 1e-6): the
# input upcast, pow(x, 2.0), mean as sum times reciprocal of a Double, rsqrt, and the
# weight applied as (1.0 + weight.float()) before the cast back to bf16 (Gemma stores the
# weight zero-centred). [B, S, H] with B = 2.
# real-sizes: 20=4096 48=3072
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id9(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 20, 48], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[48], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    S3 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T4 = fd.ops.pow(T2, S3)
    T5 = fd.ops.sum(T4, dims=[2], keepdim=False, dtype=DataType.Null)
    T6 = fd.ops.broadcast_in_dim(T5, shape=[2, 20, 1], broadcast_dims=[0, 1])
    S7 = fd.define_scalar(48.0000, dtype=DataType.Double)
    S8 = fd.ops.reciprocal(S7)
    T9 = fd.ops.mul(T6, S8)
    S10 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T11 = fd.ops.add(T9, S10)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.broadcast_in_dim(T12, shape=[2, 20, 48], broadcast_dims=[0, 1, 2])
    T14 = fd.ops.mul(T2, T13)
    T15 = fd.ops.cast(T1, dtype=DataType.Float)
    S16 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T17 = fd.ops.add(S16, T15)
    T18 = fd.ops.broadcast_in_dim(T17, shape=[2, 20, 48], broadcast_dims=[2])
    T19 = fd.ops.mul(T14, T18)
    T20 = fd.ops.cast(T19, dtype=DataType.BFloat16)
    fd.add_output(T20)
    fd.add_output(T12)


with FusionDefinition() as fd:
    nvfuser_fusion_id9(fd)

inputs = [
    torch.testing.make_tensor((2, 20, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((48,), dtype=torch.bfloat16, device='cuda:0', low=-0.5, high=0.5),
]
fd.execute(inputs)
