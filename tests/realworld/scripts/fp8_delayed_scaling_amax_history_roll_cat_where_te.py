# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Transformer Engine's delayed-scaling fp8 recipe (the cast with the previous
# step's scale, then _default_get_amax_and_update_history and _default_sf_compute: write the
# current amax into the history, amax = max over the history, roll the history by one with
# slot 0 zeroed, scale = 448 / amax / 2^margin kept only where amax > 0 and finite) fused
# into one nvFuser definition the way Thunder's fp8 traces do: x [M, K] cast to
# Float8_e4m3fn with the [1] scale; torch.roll written as slices and cats of the [L, 1]
# amax history; the new history and scale written back into their inputs with
# fd.add_output(T, alias); the inverse scale out.
# real-sizes: 24=4096 13=4096 11=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[13, 24], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[1], contiguity=[None], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[11, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T7 = fd.ops.broadcast_in_dim(T1, shape=[13, 24], broadcast_dims=[1])
    S8 = fd.define_scalar(448.000, dtype=DataType.Double)
    S9 = fd.define_scalar(-448.000, dtype=DataType.Double)
    T10 = fd.ops.mul(T3, T7)
    T11 = fd.ops.clamp(T10, S9, S8)
    T12 = fd.ops.cast(T11, dtype=DataType.Float8_e4m3fn)
    T13 = fd.ops.abs(T3)
    T14 = fd.ops.max(T13, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T18 = fd.ops.broadcast_in_dim(T14, shape=[1, 1], broadcast_dims=[])
    T28 = fd.ops.slice(T2, start_indices=[1, 0], end_indices=[11, 1], strides=[1, 1], manual_normalization=0)
    T29 = fd.ops.cat([T18, T28], dim=0, manual_padding=0)
    T30 = fd.ops.max(T29, dims=[0], keepdim=False, dtype=DataType.Null)
    S31 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T35 = fd.ops.full(shape=[1, 1], fill_value=S31, dtype=DataType.Float)
    T45 = fd.ops.slice(T29, start_indices=[2, 0], end_indices=[11, 1], strides=[1, 1], manual_normalization=0)
    T55 = fd.ops.slice(T29, start_indices=[0, 0], end_indices=[1, 1], strides=[1, 1], manual_normalization=0)
    T56 = fd.ops.cat([T35, T45, T55], dim=0, manual_padding=0)
    S57 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S58 = fd.define_scalar(2.00000, dtype=DataType.Double)
    S59 = fd.ops.pow(S58, S57)
    T60 = fd.ops.div(S8, T30)
    T61 = fd.ops.div(T60, S59)
    S62 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T63 = fd.ops.gt(T30, S62)
    T64 = fd.ops.where(T63, T61, T1)
    T65 = fd.ops.isfinite(T30)
    T66 = fd.ops.where(T65, T64, T1)
    T67 = fd.ops.reciprocal(T66)
    fd.add_output(T12)
    fd.add_output(T56, T2)
    fd.add_output(T66, T1)
    fd.add_output(T67)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((13, 24), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((1,), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
    torch.testing.make_tensor((11, 1), dtype=torch.float32, device='cuda:0', low=0.0, high=4.0),
]
fd.execute(inputs)
