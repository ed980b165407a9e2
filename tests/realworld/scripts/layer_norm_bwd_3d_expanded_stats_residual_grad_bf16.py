# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the 3-kernel LayerNorm backward of NVIDIA/Fuser issue #1473 (a Thunder trace
# of a GPT-2 XL block, [16, 512, 1600] bf16): the sizes as Int define_scalars gathered with
# define_vector, the bf16 weight already expanded to [B, S, H] (stride 0 on the two leading
# axes), the float mean expanded along the hidden axis, rstd [B, S, 1], divisions of float
# tensors by the Int hidden-size scalar, and the float gradient of the residual stream
# added to grad_input. Outputs: the float sum, its bf16 cast, grad_weight and grad_bias
# as float sums over [0, 1].
# real-sizes: 3=16 10=512 50=1600
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id14(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T2 = fd.define_tensor(shape=[-1, -1, 1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T6 = fd.ops.cast(T5, dtype=DataType.Float)
    S7 = fd.define_scalar(3, dtype=DataType.Int)
    S8 = fd.define_scalar(10, dtype=DataType.Int)
    S9 = fd.define_scalar(50, dtype=DataType.Int)
    V10 = fd.define_vector([S7, S8, S9], dtype=DataType.Int)
    T11 = fd.ops.cast(T1, dtype=DataType.Float)
    T12 = fd.ops.cast(T3, dtype=DataType.Float)
    T13 = fd.ops.sub(T12, T4)
    T14 = fd.ops.broadcast_in_dim(T2, shape=V10, broadcast_dims=[0, 1, 2])
    T15 = fd.ops.mul(T13, T14)
    T16 = fd.ops.mul(T6, T15)
    T17 = fd.ops.sum(T16, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T18 = fd.ops.sum(T6, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T19 = fd.ops.mul(T6, T11)
    T20 = fd.ops.mul(T19, T14)
    T21 = fd.ops.mul(T19, T13)
    T22 = fd.ops.sum(T21, dims=[2], keepdim=False, dtype=DataType.Null)
    S23 = fd.define_scalar(1, dtype=DataType.Int)
    V24 = fd.define_vector([S7, S8, S23], dtype=DataType.Int)
    T25 = fd.ops.broadcast_in_dim(T22, shape=V24, broadcast_dims=[0, 1])
    S26 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T27 = fd.ops.mul(S26, T25)
    S28 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T29 = fd.ops.pow(T2, S28)
    T30 = fd.ops.mul(T27, T29)
    T31 = fd.ops.neg(T20)
    T32 = fd.ops.sum(T31, dims=[2], keepdim=False, dtype=DataType.Null)
    T33 = fd.ops.broadcast_in_dim(T32, shape=V24, broadcast_dims=[0, 1])
    T34 = fd.ops.broadcast_in_dim(T30, shape=V10, broadcast_dims=[0, 1, 2])
    S35 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T36 = fd.ops.mul(S35, T34)
    T37 = fd.ops.mul(T36, T13)
    T38 = fd.ops.div(T37, S9)
    T39 = fd.ops.broadcast_in_dim(T33, shape=V10, broadcast_dims=[0, 1, 2])
    T40 = fd.ops.div(T39, S9)
    T41 = fd.ops.add(T38, T40)
    T42 = fd.ops.add(T20, T41)
    T43 = fd.ops.add(T0, T42)
    T44 = fd.ops.cast(T43, dtype=DataType.BFloat16)
    fd.add_output(T43)
    fd.add_output(T44)
    fd.add_output(T17)
    fd.add_output(T18)


with FusionDefinition() as fd:
    nvfuser_fusion_id14(fd)

inputs = [
    torch.randn((3, 10, 50), dtype=torch.float32, device='cuda:0'),
    torch.randn((50,), dtype=torch.bfloat16, device='cuda:0').expand(3, 10, 50),
    torch.testing.make_tensor((3, 10, 1), dtype=torch.float32, device='cuda:0', low=0.5, high=1.5),
    torch.randn((3, 10, 50), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((3, 10, 1), dtype=torch.float32, device='cuda:0').expand(3, 10, 50),
    torch.randn((3, 10, 50), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
