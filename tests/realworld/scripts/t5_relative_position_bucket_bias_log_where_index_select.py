# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on HF T5Attention.compute_bias with _relative_position_bucket (bidirectional, 32
# buckets, max_distance 128) as Thunder hands it to nvFuser: relative positions from two
# iotas, the sign bucket, exact buckets below 8 and log-spaced ones above
# (8 + log(|d| / 8) / log(128 / 8) * 8, truncated to int and clamped to 15), the
# relative_attention_bias table [32, heads] gathered at the buckets (index_select of the
# flattened [q, k] buckets), reshaped and permuted to the [1, heads, q, k] position bias.
# real-sizes: 13=1024 5=32
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[32, 5], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(13, dtype=DataType.Int)
    S2 = fd.define_scalar(0, dtype=DataType.Int)
    S3 = fd.define_scalar(1, dtype=DataType.Int)
    T4 = fd.ops.iota(S1, S2, S3, dtype=DataType.Int)
    T5 = fd.ops.iota(S1, S2, S3, dtype=DataType.Int)
    T6 = fd.ops.broadcast_in_dim(T4, shape=[13, 1], broadcast_dims=[0])
    T7 = fd.ops.broadcast_in_dim(T5, shape=[1, 13], broadcast_dims=[1])
    T8 = fd.ops.broadcast_in_dim(T6, shape=[13, 13], broadcast_dims=[0, 1])
    T9 = fd.ops.broadcast_in_dim(T7, shape=[13, 13], broadcast_dims=[0, 1])
    T10 = fd.ops.sub(T9, T8)
    S11 = fd.define_scalar(0, dtype=DataType.Int)
    T12 = fd.ops.gt(T10, S11)
    T13 = fd.ops.cast(T12, dtype=DataType.Int)
    S14 = fd.define_scalar(16, dtype=DataType.Int)
    T15 = fd.ops.mul(T13, S14)
    T16 = fd.ops.abs(T10)
    S17 = fd.define_scalar(8, dtype=DataType.Int)
    T18 = fd.ops.lt(T16, S17)
    T19 = fd.ops.cast(T16, dtype=DataType.Float)
    S20 = fd.define_scalar(8.00000, dtype=DataType.Double)
    T21 = fd.ops.div(T19, S20)
    T22 = fd.ops.log(T21)
    S23 = fd.define_scalar(2.77258872223978, dtype=DataType.Double)
    T24 = fd.ops.div(T22, S23)
    S25 = fd.define_scalar(8.00000, dtype=DataType.Double)
    T26 = fd.ops.mul(T24, S25)
    T27 = fd.ops.cast(T26, dtype=DataType.Int)
    S28 = fd.define_scalar(8, dtype=DataType.Int)
    T29 = fd.ops.add(S28, T27)
    S30 = fd.define_scalar(15, dtype=DataType.Int)
    T31 = fd.ops.full(shape=[13, 13], fill_value=S30, dtype=DataType.Int)
    T32 = fd.ops.minimum(T29, T31)
    T33 = fd.ops.where(T18, T16, T32)
    T34 = fd.ops.add(T15, T33)
    S40 = fd.ops.mul(S1, S1)
    V41 = fd.define_vector([S40], dtype=DataType.Int)
    T35 = fd.ops.reshape(T34, new_shape=V41)
    T36 = fd.ops.index_select(T0, T35, dim=0)
    T37 = fd.ops.reshape(T36, new_shape=[13, 13, 5])
    T38 = fd.ops.permute(T37, dims=[2, 0, 1])
    T39 = fd.ops.broadcast_in_dim(T38, shape=[1, 5, 13, 13], broadcast_dims=[1, 2, 3])
    fd.add_output(T39)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.testing.make_tensor((32, 5), dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
