# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of the OLMo / PaLM cross entropy with z-loss (1e-4 * lse^2) over
# a 50304-token vocabulary, with the one-hot target built from iota == label as in
# fusion_func_no_gather of NVIDIA/Fuser benchmarks/python/test_cross_entropy.py: softmax
# rebuilt from the saved lse [N], grad = (softmax - onehot) * g_ce + 2e-4 * lse * softmax
# * g_z, both 0-dim loss gradients divided by the 0-dim kept-token count, ignored rows
# zeroed; bf16 grad_logits.
# real-sizes: 20=4096 96=50304
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[20, 96], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[20], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[20], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T4 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T5 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T6 = fd.ops.cast(T0, dtype=DataType.Float)
    T7 = fd.ops.broadcast_in_dim(T2, shape=[20, 96], broadcast_dims=[0])
    T8 = fd.ops.sub(T6, T7)
    T9 = fd.ops.exp(T8)
    S10 = fd.define_scalar(96, dtype=DataType.Int)
    S11 = fd.define_scalar(0, dtype=DataType.Int)
    S12 = fd.define_scalar(1, dtype=DataType.Int)
    T13 = fd.ops.iota(S10, S11, S12, dtype=DataType.Int)
    T14 = fd.ops.broadcast_in_dim(T13, shape=[20, 96], broadcast_dims=[1])
    T15 = fd.ops.broadcast_in_dim(T1, shape=[20, 96], broadcast_dims=[0])
    T16 = fd.ops.eq(T14, T15)
    T17 = fd.ops.cast(T16, dtype=DataType.Float)
    T18 = fd.ops.div(T3, T5)
    T19 = fd.ops.div(T4, T5)
    T20 = fd.ops.sub(T9, T17)
    T21 = fd.ops.mul(T20, T18)
    S22 = fd.define_scalar(0.000200000, dtype=DataType.Double)
    T23 = fd.ops.mul(T2, S22)
    T24 = fd.ops.broadcast_in_dim(T23, shape=[20, 96], broadcast_dims=[0])
    T25 = fd.ops.mul(T24, T9)
    T26 = fd.ops.mul(T25, T19)
    T27 = fd.ops.add(T21, T26)
    S28 = fd.define_scalar(-100, dtype=DataType.Int)
    T29 = fd.ops.ne(T1, S28)
    T30 = fd.ops.broadcast_in_dim(T29, shape=[20, 96], broadcast_dims=[0])
    S31 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T32 = fd.ops.where(T30, T27, S31)
    T33 = fd.ops.cast(T32, dtype=DataType.BFloat16)
    fd.add_output(T33)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.testing.make_tensor((20, 96), dtype=torch.bfloat16, device='cuda:0', low=-4, high=4),
    torch.randint(0, 96, (20,), dtype=torch.int64, device='cuda:0'),
    torch.rand((20,), dtype=torch.float32, device='cuda:0') + 8.0,
    torch.tensor(1.0, dtype=torch.float32, device='cuda:0'),
    torch.tensor(1.0, dtype=torch.float32, device='cuda:0'),
    torch.tensor(20.0, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
