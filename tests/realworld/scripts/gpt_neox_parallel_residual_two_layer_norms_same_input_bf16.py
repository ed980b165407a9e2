# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on GPT-NeoX / Pythia with use_parallel_residual (HF GPTNeoXLayer.forward): the
# attention's input_layernorm and the MLP's post_attention_layernorm both normalize the same
# hidden states, x + attn(ln1(x)) + mlp(ln2(x)), so Thunder hands nvFuser two var_means of
# one bf16 input (eps 1e-5), each with its own weight and bias, and the two normalized
# bf16 outputs (Pythia-12B: hidden 5120, 8192 tokens).
# real-sizes: 7=8192 40=5120
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id7(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[7, 40], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[40], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T2 = fd.define_tensor(shape=[40], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T3 = fd.define_tensor(shape=[40], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[40], contiguity=[True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[0])
    T5 = fd.ops.cast(T0, dtype=DataType.Float)
    T6, T7 = fd.ops.var_mean(T5, dims=[1], correction=0, keepdim=False)
    T8 = fd.ops.broadcast_in_dim(T6, shape=[7, 1], broadcast_dims=[0])
    T9 = fd.ops.broadcast_in_dim(T7, shape=[7, 1], broadcast_dims=[0])
    S10 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T11 = fd.ops.add(T8, S10)
    T12 = fd.ops.rsqrt(T11)
    T13 = fd.ops.broadcast_in_dim(T9, shape=[7, 40], broadcast_dims=[0, 1])
    T14 = fd.ops.sub(T5, T13)
    T15 = fd.ops.broadcast_in_dim(T12, shape=[7, 40], broadcast_dims=[0, 1])
    T16 = fd.ops.mul(T14, T15)
    T17 = fd.ops.broadcast_in_dim(T1, shape=[7, 40], broadcast_dims=[1])
    T18 = fd.ops.cast(T17, dtype=DataType.Float)
    T19 = fd.ops.mul(T16, T18)
    T20 = fd.ops.broadcast_in_dim(T2, shape=[7, 40], broadcast_dims=[1])
    T21 = fd.ops.cast(T20, dtype=DataType.Float)
    T22 = fd.ops.add(T19, T21)
    T23 = fd.ops.cast(T22, dtype=DataType.BFloat16)
    T24 = fd.ops.cast(T0, dtype=DataType.Float)
    T25, T26 = fd.ops.var_mean(T24, dims=[1], correction=0, keepdim=False)
    T27 = fd.ops.broadcast_in_dim(T25, shape=[7, 1], broadcast_dims=[0])
    T28 = fd.ops.broadcast_in_dim(T26, shape=[7, 1], broadcast_dims=[0])
    S29 = fd.define_scalar(1.00000e-05, dtype=DataType.Double)
    T30 = fd.ops.add(T27, S29)
    T31 = fd.ops.rsqrt(T30)
    T32 = fd.ops.broadcast_in_dim(T28, shape=[7, 40], broadcast_dims=[0, 1])
    T33 = fd.ops.sub(T24, T32)
    T34 = fd.ops.broadcast_in_dim(T31, shape=[7, 40], broadcast_dims=[0, 1])
    T35 = fd.ops.mul(T33, T34)
    T36 = fd.ops.broadcast_in_dim(T3, shape=[7, 40], broadcast_dims=[1])
    T37 = fd.ops.cast(T36, dtype=DataType.Float)
    T38 = fd.ops.mul(T35, T37)
    T39 = fd.ops.broadcast_in_dim(T4, shape=[7, 40], broadcast_dims=[1])
    T40 = fd.ops.cast(T39, dtype=DataType.Float)
    T41 = fd.ops.add(T38, T40)
    T42 = fd.ops.cast(T41, dtype=DataType.BFloat16)
    fd.add_output(T23)
    fd.add_output(T42)


with FusionDefinition() as fd:
    nvfuser_fusion_id7(fd)

inputs = [
    torch.testing.make_tensor((7, 40), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((40,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((40,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((40,), dtype=torch.bfloat16, device='cuda:0'),
    torch.testing.make_tensor((40,), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
