# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/llama_inf_tests/graph_0.py (the first fusion of a
# Thunder-compiled Llama inference step): embedding_fwd with its optional arguments as
# define_scalar values, a causal mask from iota (sub, ge, where into a bf16 fill of the
# most negative bf16, gt against a reshaped iota), the padding mask [1, 6] added in float,
# eq 0 and a where back to the bf16 minimum; fd.ops.set on the expanded mask.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 6], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[512, 64], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[1, 6], contiguity=[None, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    S3 = fd.define_scalar(2.00000, dtype=DataType.Double)
    S4 = fd.define_scalar(False, dtype=DataType.Bool)
    S5 = fd.define_scalar(False, dtype=DataType.Bool)
    T6 = fd.ops.embedding_fwd(T0, T1, None, None, S3, S4, S5)
    S7 = fd.define_scalar(6, dtype=DataType.Int)
    S8 = fd.define_scalar(0, dtype=DataType.Int)
    S9 = fd.define_scalar(1, dtype=DataType.Int)
    T10 = fd.ops.iota(S7, S8, S9, dtype=DataType.Int)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[1, 6], broadcast_dims=[1])
    S12 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T13 = fd.ops.full(shape=[6, 6], fill_value=S12, dtype=DataType.BFloat16)
    T14 = fd.ops.broadcast_in_dim(T10, shape=[6, 1], broadcast_dims=[0])
    T15 = fd.ops.broadcast_in_dim(T11, shape=[6, 6], broadcast_dims=[0, 1])
    T16 = fd.ops.broadcast_in_dim(T14, shape=[6, 6], broadcast_dims=[0, 1])
    T17 = fd.ops.sub(T15, T16)
    S18 = fd.define_scalar(1, dtype=DataType.Int)
    T19 = fd.ops.ge(T17, S18)
    S20 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T21 = fd.ops.where(T19, T13, S20)
    T22 = fd.ops.reshape(T10, new_shape=[6, 1])
    T23 = fd.ops.broadcast_in_dim(T10, shape=[6, 6], broadcast_dims=[1])
    T24 = fd.ops.broadcast_in_dim(T22, shape=[6, 6], broadcast_dims=[0, 1])
    T25 = fd.ops.gt(T23, T24)
    T26 = fd.ops.cast(T21, dtype=DataType.Float)
    T27 = fd.ops.cast(T25, dtype=DataType.Float)
    T28 = fd.ops.mul(T26, T27)
    T29 = fd.ops.cast(T28, dtype=DataType.BFloat16)
    T30 = fd.ops.broadcast_in_dim(T29, shape=[1, 1, 6, 6], broadcast_dims=[2, 3])
    T31 = fd.ops.broadcast_in_dim(T30, shape=[1, 1, 6, 6], broadcast_dims=[0, 1, 2, 3])
    T32 = fd.ops.set(T31)
    T33 = fd.ops.broadcast_in_dim(T2, shape=[1, 1, 1, 6], broadcast_dims=[0, 3])
    T34 = fd.ops.broadcast_in_dim(T33, shape=[1, 1, 6, 6], broadcast_dims=[0, 1, 2, 3])
    T35 = fd.ops.cast(T32, dtype=DataType.Float)
    T36 = fd.ops.cast(T34, dtype=DataType.Float)
    T37 = fd.ops.add(T35, T36)
    T38 = fd.ops.cast(T37, dtype=DataType.BFloat16)
    S39 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T40 = fd.ops.eq(T38, S39)
    S41 = fd.define_scalar(-3.38953e+38, dtype=DataType.Double)
    T42 = fd.ops.where(T40, S41, T32)
    fd.add_output(T6)
    fd.add_output(T32)
    fd.add_output(T42)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randint(0, 512, (1, 6), dtype=torch.int64, device='cuda:0'),
    torch.testing.make_tensor((512, 64), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 2, (1, 6), dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
