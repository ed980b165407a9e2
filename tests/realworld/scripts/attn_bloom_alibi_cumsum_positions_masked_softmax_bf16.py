# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF BLOOM attention (build_alibi_tensor + baddbmm + masked_fill + softmax) as a
# Thunder trace hands its elementwise part to nvFuser: positions from the int64 attention
# mask as (cumsum(mask) - 1) * mask, times the per-head slopes [H] to an alibi bias
# [B*H, 1, S] in bf16, added (beta 1) to the scaled bf16 scores [B*H, S, S]; the scores
# reshaped to [B, H, S, S], the bool causal mask [B, 1, S, S] (expanded from [S, S])
# broadcast over heads and filled with bf16's lowest value, softmax in float, bf16
# probabilities reshaped back to [B*H, S, S].
# real-sizes: 13=1024 5=16
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[10, 13, 13], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[5], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[2, 13], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[2, 1, 13, 13], contiguity=[None, None, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[3, 2, 1, 0])
    T4 = fd.ops.cumsum(T2, dim=1)
    S5 = fd.define_scalar(1, dtype=DataType.Int)
    T6 = fd.ops.sub(T4, S5)
    T7 = fd.ops.mul(T6, T2)
    T8 = fd.ops.cast(T7, dtype=DataType.Float)
    T13 = fd.ops.broadcast_in_dim(T8, shape=[2, 1, 13], broadcast_dims=[0, 2])
    T18 = fd.ops.broadcast_in_dim(T13, shape=[2, 5, 13], broadcast_dims=[0, 1, 2])
    T23 = fd.ops.broadcast_in_dim(T1, shape=[2, 5, 13], broadcast_dims=[1])
    T24 = fd.ops.mul(T23, T18)
    T29 = fd.ops.reshape(T24, new_shape=[10, 1, 13])
    T30 = fd.ops.cast(T29, dtype=DataType.BFloat16)
    T35 = fd.ops.broadcast_in_dim(T30, shape=[10, 13, 13], broadcast_dims=[0, 1, 2])
    S36 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S37 = fd.define_scalar(0.25000, dtype=DataType.Double)
    T38 = fd.ops.cast(T0, dtype=DataType.Float)
    T39 = fd.ops.mul(T38, S37)
    T40 = fd.ops.cast(T35, dtype=DataType.Float)
    T41 = fd.ops.mul(T40, S36)
    T42 = fd.ops.add(T41, T39)
    T43 = fd.ops.cast(T42, dtype=DataType.BFloat16)
    T49 = fd.ops.reshape(T43, new_shape=[2, 5, 13, 13])
    S50 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T56 = fd.ops.broadcast_in_dim(T3, shape=[2, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T57 = fd.ops.cast(T49, dtype=DataType.Float)
    T58 = fd.ops.where(T56, S50, T57)
    T59 = fd.ops.max(T58, dims=[3], keepdim=False, dtype=DataType.Null)
    T65 = fd.ops.broadcast_in_dim(T59, shape=[2, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T71 = fd.ops.broadcast_in_dim(T65, shape=[2, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T72 = fd.ops.sub(T58, T71)
    T73 = fd.ops.exp(T72)
    T74 = fd.ops.sum(T73, dims=[3], keepdim=False, dtype=DataType.Null)
    T80 = fd.ops.broadcast_in_dim(T74, shape=[2, 5, 13, 1], broadcast_dims=[0, 1, 2])
    T86 = fd.ops.broadcast_in_dim(T80, shape=[2, 5, 13, 13], broadcast_dims=[0, 1, 2, 3])
    T87 = fd.ops.div(T73, T86)
    T88 = fd.ops.cast(T87, dtype=DataType.BFloat16)
    T93 = fd.ops.reshape(T88, new_shape=[10, 13, 13])
    fd.add_output(T93)
    fd.add_output(T30)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((10, 13, 13), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((5,), dtype=torch.float32, device='cuda:0', low=0.0, high=1.0),
    torch.ones((2, 13), dtype=torch.int64, device='cuda:0'),
    (torch.rand((13, 13), device='cuda:0') < 0.5).expand(2, 1, 13, 13),
]
fd.execute(inputs)
