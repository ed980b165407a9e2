# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF SwitchTransformersTop1Router (top-1 routing with an expert capacity: the
# one-hot expert index's cumsum over tokens is each token's priority in its expert, tokens
# past the capacity are dropped) as a Thunder trace hands it to nvFuser: softmax of float
# router logits [T, E]; the argmax as topk(1) reshaped to [T]; the one-hot as eq with an
# iota, cast to int64; cumsum along the tokens compared with the capacity (an Int scalar)
# and multiplied in; router_probs = max over experts unsqueezed to [T, 1]; the combine
# weights as their product.
# real-sizes: 26=8192
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[26, 8], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    T5 = fd.ops.broadcast_in_dim(T1, shape=[26, 1], broadcast_dims=[0])
    T9 = fd.ops.broadcast_in_dim(T5, shape=[26, 8], broadcast_dims=[0, 1])
    T10 = fd.ops.sub(T0, T9)
    T11 = fd.ops.exp(T10)
    T12 = fd.ops.sum(T11, dims=[1], keepdim=False, dtype=DataType.Null)
    T16 = fd.ops.broadcast_in_dim(T12, shape=[26, 1], broadcast_dims=[0])
    T20 = fd.ops.broadcast_in_dim(T16, shape=[26, 8], broadcast_dims=[0, 1])
    T21 = fd.ops.div(T11, T20)
    S22 = fd.define_scalar(1, dtype=DataType.Int)
    T23, T24 = fd.ops.topk(T21, S22, dim=1, largest=True, sorted=True)
    T27 = fd.ops.reshape(T24, new_shape=[26])
    S28 = fd.define_scalar(8, dtype=DataType.Int)
    S29 = fd.define_scalar(0, dtype=DataType.Int)
    S30 = fd.define_scalar(1, dtype=DataType.Int)
    T31 = fd.ops.iota(S28, S29, S30, dtype=DataType.Int)
    T35 = fd.ops.broadcast_in_dim(T27, shape=[26, 8], broadcast_dims=[0])
    T39 = fd.ops.broadcast_in_dim(T31, shape=[26, 8], broadcast_dims=[1])
    T40 = fd.ops.eq(T35, T39)
    T41 = fd.ops.cast(T40, dtype=DataType.Int)
    T42 = fd.ops.cumsum(T41, dim=0)
    S43 = fd.define_scalar(5, dtype=DataType.Int)
    T44 = fd.ops.le(T42, S43)
    T45 = fd.ops.cast(T44, dtype=DataType.Int)
    T46 = fd.ops.mul(T41, T45)
    T47 = fd.ops.max(T21, dims=[1], keepdim=False, dtype=DataType.Null)
    T51 = fd.ops.broadcast_in_dim(T47, shape=[26, 1], broadcast_dims=[0])
    T55 = fd.ops.broadcast_in_dim(T51, shape=[26, 8], broadcast_dims=[0, 1])
    T56 = fd.ops.cast(T46, dtype=DataType.Float)
    T57 = fd.ops.mul(T55, T56)
    fd.add_output(T46)
    fd.add_output(T51)
    fd.add_output(T57)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((26, 8), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
