# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder backward trace of a Qwen2-style decoder block (pre-norm RMSNorm,
# fused q/k/v projections with biases, GQA) as handed to nvFuser: the RMSNorm backward of the
# block's input norm in float with the saved rstd, the residual stream's gradient added, the
# norm weight's gradient summed over [0, 1] and accumulated into its fp32 main grad, and the
# q/k/v weight gradients of the micro-batch concatenated (cat of [H, H], [KV, H], [KV, H]),
# divided by the gradient-accumulation steps and accumulated, and the bias gradient summed
# from the concatenated q/k/v output gradients. Two Int scalars come
# first (accumulation steps, hidden size), 18 inputs and 6 outputs, as in the H200 report of
# a [1, 2048, 8192] bf16 run with a [9216, 8192] concatenated weight gradient (KV = H / 16).
# Shrunk to [1, 40, 128], KV = 8.
# real-sizes: 40=2048 128=8192 8=512
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id11(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(None, dtype=DataType.Int)
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    T2 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T3 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T4 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    T5 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T6 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T7 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T8 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T9 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T10 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T11 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T12 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T13 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T14 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T15 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False, stride_order=[0])
    T16 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T17 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.Bool, is_cpu=False, stride_order=[2, 1, 0])
    # RMSNorm backward: x_hat = x * rstd, rounded to bf16 as the forward did
    T18 = fd.ops.cast(T3, dtype=DataType.Float)
    T19 = fd.ops.broadcast_in_dim(T4, shape=[1, 40, 128], broadcast_dims=[0, 1, 2])
    T20 = fd.ops.mul(T18, T19)
    T21 = fd.ops.cast(T20, dtype=DataType.BFloat16)
    T22 = fd.ops.cast(T21, dtype=DataType.Float)
    T23 = fd.ops.cast(T2, dtype=DataType.Float)
    T24 = fd.ops.mul(T23, T22)
    T25 = fd.ops.sum(T24, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T26 = fd.ops.add(T7, T25)
    T27 = fd.ops.cast(T5, dtype=DataType.Float)
    T28 = fd.ops.broadcast_in_dim(T27, shape=[1, 40, 128], broadcast_dims=[2])
    T29 = fd.ops.mul(T23, T28)
    T30 = fd.ops.cast(T29, dtype=DataType.BFloat16)
    T31 = fd.ops.cast(T30, dtype=DataType.Float)
    T32 = fd.ops.mul(T31, T19)
    T33 = fd.ops.mul(T31, T18)
    T34 = fd.ops.sum(T33, dims=[2], keepdim=False, dtype=DataType.Null)
    T35 = fd.ops.broadcast_in_dim(T34, shape=[1, 40, 1], broadcast_dims=[0, 1])
    S36 = fd.define_scalar(-0.500000, dtype=DataType.Double)
    T37 = fd.ops.mul(S36, T35)
    S38 = fd.define_scalar(3.00000, dtype=DataType.Double)
    T39 = fd.ops.pow(T4, S38)
    T40 = fd.ops.mul(T37, T39)
    S41 = fd.ops.cast(S1, dtype=DataType.Double)
    S42 = fd.ops.reciprocal(S41)
    T43 = fd.ops.mul(T40, S42)
    T44 = fd.ops.broadcast_in_dim(T43, shape=[1, 40, 128], broadcast_dims=[0, 1, 2])
    S45 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T46 = fd.ops.mul(S45, T18)
    T47 = fd.ops.mul(T44, T46)
    T48 = fd.ops.add(T32, T47)
    # the residual stream's gradient (through the block's dropout) joins the norm's
    T49 = fd.ops.cast(T16, dtype=DataType.Float)
    T50 = fd.ops.cast(T17, dtype=DataType.Float)
    T51 = fd.ops.mul(T49, T50)
    S52 = fd.define_scalar(1.11111, dtype=DataType.Double)
    T53 = fd.ops.mul(T51, S52)
    T54 = fd.ops.cast(T6, dtype=DataType.Float)
    T55 = fd.ops.add(T54, T53)
    T56 = fd.ops.add(T48, T55)
    T57 = fd.ops.cast(T56, dtype=DataType.BFloat16)
    # q/k/v weight gradients: cat, divided by the accumulation steps, accumulated in fp32
    T58 = fd.ops.cat([T8, T9, T10], dim=0, manual_padding=0)
    T59 = fd.ops.cast(T58, dtype=DataType.Float)
    S60 = fd.ops.cast(S0, dtype=DataType.Double)
    S61 = fd.ops.reciprocal(S60)
    T62 = fd.ops.mul(T59, S61)
    T63 = fd.ops.add(T11, T62)
    T64 = fd.ops.cast(T62, dtype=DataType.BFloat16)
    # q/k/v bias gradients: the projections' output gradients, concatenated (the fused
    # projection's gradient) and summed over [0, 1]
    T65 = fd.ops.cat([T12, T13, T14], dim=2, manual_padding=0)
    T66 = fd.ops.cast(T65, dtype=DataType.Float)
    T67 = fd.ops.sum(T66, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T68 = fd.ops.mul(T67, S61)
    T69 = fd.ops.add(T15, T68)
    fd.add_output(T57)
    fd.add_output(T26)
    fd.add_output(T64)
    fd.add_output(T63)
    fd.add_output(T69)
    fd.add_output(T65)


with FusionDefinition() as fd:
    nvfuser_fusion_id11(fd)

inputs = [
    4,
    128,
    torch.randn((1, 40, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 40, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.rand((1, 40, 1), dtype=torch.float32, device='cuda:0') + 0.5,
    torch.randn((128,), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 40, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((128,), dtype=torch.float32, device='cuda:0'),
    torch.randn((128, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((8, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((144, 128), dtype=torch.float32, device='cuda:0'),
    torch.randn((1, 40, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 40, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((1, 40, 8), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((144,), dtype=torch.float32, device='cuda:0'),
    torch.randn((1, 40, 128), dtype=torch.bfloat16, device='cuda:0'),
    torch.rand((1, 40, 128), device='cuda:0') < 0.9,
]
fd.execute(inputs)
