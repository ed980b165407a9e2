# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Thunder's nvFuser translation of prims.div (thunder/executors/nvfuserex_impl.py):
# a float numerator over a non-float denominator becomes fd.ops.mul(a, fd.ops.reciprocal(b)),
# so reciprocal (and rsqrt, log1p, sigmoid) see the int64 token counts of a bool mask and the
# bool mask itself. nvFuser's float_op_config casts such integer or bool operands to float
# before the op; the masked mean loss of a language model is the typical trace.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False, stride_order=[1, 0])
    T3 = fd.ops.cast(T0, dtype=DataType.Float)
    T4 = fd.ops.cast(T1, dtype=DataType.Float)
    T5 = fd.ops.mul(T3, T4)
    T6 = fd.ops.sum(T5, dims=[1], keepdim=False, dtype=DataType.Null)
    T7 = fd.ops.sum(T1, dims=[1], keepdim=False, dtype=DataType.Null)
    T8 = fd.ops.reciprocal(T7)
    T9 = fd.ops.mul(T6, T8)
    T10 = fd.ops.rsqrt(T7)
    T11 = fd.ops.log1p(T2)
    T12 = fd.ops.sigmoid(T1)
    S13 = fd.define_scalar(0.5, dtype=DataType.Double)
    T14 = fd.ops.mul(T12, S13)
    T15 = fd.ops.cast(T14, dtype=DataType.BFloat16)
    fd.add_output(T9)
    fd.add_output(T10)
    fd.add_output(T11)
    fd.add_output(T15)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.testing.make_tensor((6, 48), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((6, 48), dtype=torch.bool, device='cuda:0'),
    torch.testing.make_tensor((6, 48), dtype=torch.int64, device='cuda:0', low=0, high=50000),
]
fd.execute(inputs)
