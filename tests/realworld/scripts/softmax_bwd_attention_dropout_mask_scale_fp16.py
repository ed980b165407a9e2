# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser benchmarks/python/test_huggingface_attn_bwd.py (the eager BERT
# attention: scores / sqrt(d), softmax, dropout) for BERT-large ([B, 16 heads, 512, 512],
# fp16): the gradient arriving at the dropout output is masked by the Bool keep-mask and
# scaled by 1/(1-p), the softmax backward takes probs * (g - sum(g * probs, -1)), and the
# result is multiplied by the 1/sqrt(64) score scale; fp16 grad of the raw scores out.
# real-sizes: 4=16 10=512
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Bool, is_cpu=False)
    T2 = fd.define_tensor(shape=[-1, -1, -1, -1], contiguity=[True, True, True, True], dtype=DataType.Half, is_cpu=False)
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.cast(T2, dtype=DataType.Float)
    T6 = fd.ops.mul(T3, T4)
    S7 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T8 = fd.ops.mul(T6, S7)
    T9 = fd.ops.mul(T8, T5)
    T10 = fd.ops.sum(T9, dims=[3], keepdim=False, dtype=DataType.Null)
    V11 = fd.define_vector([T0.size(0), T0.size(1), T0.size(2), 1], dtype=DataType.Int)
    T12 = fd.ops.broadcast_in_dim(T10, shape=V11, broadcast_dims=[0, 1, 2])
    V13 = T0.shape()
    T14 = fd.ops.broadcast_in_dim(T12, shape=V13, broadcast_dims=[0, 1, 2, 3])
    T15 = fd.ops.sub(T8, T14)
    T16 = fd.ops.mul(T5, T15)
    S17 = fd.define_scalar(0.125000, dtype=DataType.Double)
    T18 = fd.ops.mul(T16, S17)
    T19 = fd.ops.cast(T18, dtype=DataType.Half)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.randn((2, 4, 10, 10), dtype=torch.float16, device='cuda:0'),
    torch.rand((2, 4, 10, 10), device='cuda:0') < 0.9,
    torch.rand((2, 4, 10, 10), dtype=torch.float16, device='cuda:0') * 0.2,
]
fd.execute(inputs)
