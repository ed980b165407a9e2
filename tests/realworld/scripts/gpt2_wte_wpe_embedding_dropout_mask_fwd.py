# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of the input embeddings of nanoGPT / HF GPT-2 XL (wte: vocab
# 50257, hidden 1600; wpe: 1024 positions): token rows by index_select on the flattened ids,
# position rows by index_select with an iota of the sequence length (the positions tensor
# built inside the fusion), their sum, and embedding dropout (p = 0.1) applied with a Bool
# keep-mask input and the 1/(1-p) scale; float32 training.
# real-sizes: 157=50257 50=1600 11=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id2(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 11], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[157, 50], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[11, 50], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[2, 11, 50], contiguity=[True, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[2, 1, 0])
    S4 = fd.define_scalar(0, dtype=DataType.Int)
    S5 = fd.define_scalar(11, dtype=DataType.Int)
    S6 = fd.define_scalar(1, dtype=DataType.Int)
    T7 = fd.ops.iota(S5, S4, S6, dtype=DataType.Int)
    T8 = fd.ops.reshape(T0, new_shape=[22])
    T9 = fd.ops.index_select(T1, T8, dim=0)
    T10 = fd.ops.reshape(T9, new_shape=[2, 11, 50])
    T11 = fd.ops.index_select(T2, T7, dim=0)
    T12 = fd.ops.broadcast_in_dim(T11, shape=[2, 11, 50], broadcast_dims=[1, 2])
    T13 = fd.ops.add(T10, T12)
    T14 = fd.ops.cast(T3, dtype=DataType.Float)
    T15 = fd.ops.mul(T13, T14)
    S16 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T17 = fd.ops.mul(T15, S16)
    fd.add_output(T17)


with FusionDefinition() as fd:
    nvfuser_fusion_id2(fd)

inputs = [
    torch.randint(0, 157, (2, 11), dtype=torch.int64, device='cuda:0'),
    torch.randn((157, 50), dtype=torch.float32, device='cuda:0'),
    torch.randn((11, 50), dtype=torch.float32, device='cuda:0'),
    torch.rand((2, 11, 50), device='cuda:0') < 0.9,
]
fd.execute(inputs)
