# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the inputs list that nvFuser's FusionDefinition.repro_script_for prints
# (nvfuser/__init__.py): make_tensor for contiguous tensors, randn(n).as_strided(...) for
# strided floating ones, randint(0, 2, (n,), dtype=torch.bool).as_strided(...) for strided
# bool ones, and scalars with inf spelled float("inf") / -float("inf"), as in the masked
# softmax / clamp fusions Thunder reports in NVIDIA/Fuser issues.
# CUDA devices:
#  0: NVIDIA H100 80GB HBM3
# torch version: 2.6.0a0+gitffb7a08
# cuda version: 12.6
# nvfuser version: 0.2.22+git6912435
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 8, 16], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[2, 8, 16], contiguity=[True, None, True], dtype=DataType.Bool, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[2, 8, 16], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 0, 1])
    S3 = fd.define_scalar(None, dtype=DataType.Double)
    S4 = fd.define_scalar(None, dtype=DataType.Double)
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6 = fd.ops.add(T5, T2)
    T7 = fd.ops.where(T1, T6, S4)
    T8 = fd.ops.clamp(T7, S4, S3)
    T9 = fd.ops.max(T8, dims=[2], keepdim=False, dtype=DataType.Null)
    T10 = fd.ops.broadcast_in_dim(T9, shape=[2, 8, 1], broadcast_dims=[0, 1])
    T11 = fd.ops.sub(T8, T10)
    T12 = fd.ops.exp(T11)
    T13 = fd.ops.sum(T12, dims=[2], keepdim=False, dtype=DataType.Null)
    T14 = fd.ops.broadcast_in_dim(T13, shape=[2, 8, 1], broadcast_dims=[0, 1])
    T15 = fd.ops.div(T12, T14)
    T16 = fd.ops.cast(T15, dtype=DataType.BFloat16)
    fd.add_output(T16)

with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    torch.testing.make_tensor((2, 8, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randint(0, 2, (32,), dtype=torch.bool, device='cuda:0').as_strided((2, 8, 16), (16, 0, 1)),
    torch.randn(256, dtype=torch.float32, device='cuda:0').as_strided((2, 8, 16), (128, 1, 8)),
    float("inf"),
    -float("inf"),
]
fd.execute(inputs)
