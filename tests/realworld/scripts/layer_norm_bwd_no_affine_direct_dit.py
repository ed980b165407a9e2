# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the backward of nn.LayerNorm(1152, elementwise_affine=False) in DiT-XL blocks
# (the norm adaLN modulates, NVIDIA/Fuser issue #2146), written in the nvfuser_direct
# spelling (`from nvfuser_direct import ...`, tv names, plain-list shapes): bf16 input and
# grad_out over [B, T, H], saved float mean and rstd [B, T, 1]; with no weight the only
# output is grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)), cast to bf16.
# real-sizes: 16=256 36=1152
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    tv1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    tv2 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    tv3 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    tv4 = fd.ops.cast(tv0, dtype=DataType.Float)
    tv5 = fd.ops.cast(tv1, dtype=DataType.Float)
    tv6 = fd.ops.broadcast_in_dim(tv2, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    tv7 = fd.ops.sub(tv4, tv6)
    tv8 = fd.ops.broadcast_in_dim(tv3, shape=[2, 16, 36], broadcast_dims=[0, 1, 2])
    tv9 = fd.ops.mul(tv7, tv8)
    tv10 = fd.ops.sum(tv5, dims=[2], keepdim=False, dtype=DataType.Null)
    tv11 = fd.ops.mul(tv5, tv9)
    tv12 = fd.ops.sum(tv11, dims=[2], keepdim=False, dtype=DataType.Null)
    s13 = fd.define_scalar(36.0000, dtype=DataType.Double)
    s14 = fd.ops.reciprocal(s13)
    tv15 = fd.ops.mul(tv10, s14)
    tv16 = fd.ops.mul(tv12, s14)
    tv17 = fd.ops.broadcast_in_dim(tv15, shape=[2, 16, 36], broadcast_dims=[0, 1])
    tv18 = fd.ops.broadcast_in_dim(tv16, shape=[2, 16, 36], broadcast_dims=[0, 1])
    tv19 = fd.ops.sub(tv5, tv17)
    tv20 = fd.ops.mul(tv9, tv18)
    tv21 = fd.ops.sub(tv19, tv20)
    tv22 = fd.ops.mul(tv21, tv8)
    tv23 = fd.ops.cast(tv22, dtype=DataType.BFloat16)
    fd.add_output(tv23)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((2, 16, 36), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((2, 16, 36), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((2, 16, 1), dtype=torch.float32, device='cuda:0'),
    torch.testing.make_tensor((2, 16, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=2.0),
]
fd.execute(inputs)
