# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on CLIP's QuickGELUActivation (HF CLIPMLP: fc1 then x * sigmoid(1.702 * x)) as a
# Thunder trace of the vision tower hands the fc1 epilogue to nvFuser: the fp16 fc1 output
# [B, S, 4H] (ViT-L/14 at 336px: 577 tokens, intermediate 4096) plus its bias, the quick
# GELU in float with the sigmoid op, fp16 out.
# real-sizes: 24=4096 13=577
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 24], contiguity=[True, True, True], dtype=DataType.Half, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[24], contiguity=[True], dtype=DataType.Half, is_cpu=False, stride_order=[0])
    T6 = fd.ops.broadcast_in_dim(T1, shape=[2, 13, 24], broadcast_dims=[2])
    T7 = fd.ops.cast(T0, dtype=DataType.Float)
    T8 = fd.ops.cast(T6, dtype=DataType.Float)
    T9 = fd.ops.add(T7, T8)
    S10 = fd.define_scalar(1.70200, dtype=DataType.Double)
    T11 = fd.ops.mul(T9, S10)
    T12 = fd.ops.sigmoid(T11)
    T13 = fd.ops.mul(T9, T12)
    T14 = fd.ops.cast(T13, dtype=DataType.Half)
    fd.add_output(T14)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 24), dtype=torch.float16, device='cuda:0'),
    torch.testing.make_tensor((24,), dtype=torch.float16, device='cuda:0'),
]
fd.execute(inputs)
