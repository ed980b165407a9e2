# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the cross-entropy backward graph that NVIDIA/Fuser
# benchmarks/python/cross_entropy_loss.py records (aten decomposition of F.cross_entropy,
# logits [8192, 3024]): a zero [N, V] tensor from fd.ops.full with -1.0 scattered at each
# row's label (ignored labels redirected to 0), the 0-dim loss gradient divided by the
# 0-dim count of kept tokens and zeroed on ignored rows, the saved amax and log-sum-exp
# [N, 1] used to rebuild softmax, a keepdim row sum; float grad_logits out.
# real-sizes: 24=8192 84=3024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id9(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.Int, is_cpu=False, stride_order=[0])
    T1 = fd.define_tensor(shape=[24, 84], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[24, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[24, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T5 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    T6 = fd.ops.div(T5, T4)
    T7 = fd.ops.broadcast_in_dim(T0, shape=[24, 1], broadcast_dims=[0])
    S8 = fd.define_scalar(-100, dtype=DataType.Int)
    T9 = fd.ops.ne(T7, S8)
    S10 = fd.define_scalar(0, dtype=DataType.Int)
    T11 = fd.ops.where(T9, T7, S10)
    S12 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T13 = fd.ops.full(shape=[24, 84], fill_value=S12, dtype=DataType.Float)
    S14 = fd.define_scalar(-1.00000, dtype=DataType.Double)
    T15 = fd.ops.scatter(T13, T11, S14, dim=1)
    T16 = fd.ops.broadcast_in_dim(T6, shape=[24, 1], broadcast_dims=[])
    T17 = fd.ops.where(T9, T16, S12)
    T18 = fd.ops.broadcast_in_dim(T17, shape=[24, 84], broadcast_dims=[0, 1])
    T19 = fd.ops.mul(T15, T18)
    T20 = fd.ops.broadcast_in_dim(T2, shape=[24, 84], broadcast_dims=[0, 1])
    T21 = fd.ops.sub(T1, T20)
    T22 = fd.ops.broadcast_in_dim(T3, shape=[24, 84], broadcast_dims=[0, 1])
    T23 = fd.ops.sub(T21, T22)
    T24 = fd.ops.exp(T23)
    T25 = fd.ops.sum(T19, dims=[1], keepdim=True, dtype=DataType.Null)
    T26 = fd.ops.broadcast_in_dim(T25, shape=[24, 84], broadcast_dims=[0, 1])
    T27 = fd.ops.mul(T24, T26)
    T28 = fd.ops.sub(T19, T27)
    fd.add_output(T28)


with FusionDefinition() as fd:
    nvfuser_fusion_id9(fd)

inputs = [
    torch.randint(0, 84, (24,), dtype=torch.int64, device='cuda:0'),
    torch.randn((24, 84), dtype=torch.float32, device='cuda:0'),
    torch.randn((24, 1), dtype=torch.float32, device='cuda:0') + 2.0,
    torch.rand((24, 1), dtype=torch.float32, device='cuda:0') + 4.0,
    torch.tensor(24.0, dtype=torch.float32, device='cuda:0'),
    torch.tensor(1.0, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
