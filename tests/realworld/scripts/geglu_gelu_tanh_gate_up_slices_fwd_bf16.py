# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on Gemma's MLP (GeGLU: gelu_pytorch_tanh(gate_proj(x)) * up_proj(x), Gemma-2B's
# intermediate 16384) after a fused gate/up projection, as Thunder hands it to nvFuser, in
# the shape of NVIDIA/Fuser benchmarks/python/test_chunk_silu_fwd.py with GELU in place of
# SiLU: the [B, S, 2I] bf16 projection sliced into gate and up, the tanh-approximated GELU
# decomposed (x * 0.5 * (1 + tanh(0.797885 * (x + 0.044715 * x^3)))) in float, times up,
# bf16 out.
# real-sizes: 22=16384 13=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 13, 44], contiguity=[True, True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[2, 1, 0])
    T13 = fd.ops.slice(T0, start_indices=[0, 0, 0], end_indices=[2, 13, 22], strides=[1, 1, 1], manual_normalization=0)
    T14 = fd.ops.cast(T13, dtype=DataType.Float)
    T27 = fd.ops.slice(T0, start_indices=[0, 0, 22], end_indices=[2, 13, 44], strides=[1, 1, 1], manual_normalization=0)
    T28 = fd.ops.cast(T27, dtype=DataType.Float)
    T29 = fd.ops.mul(T14, T14)
    T30 = fd.ops.mul(T29, T14)
    S31 = fd.define_scalar(0.04471, dtype=DataType.Double)
    T32 = fd.ops.mul(T30, S31)
    T33 = fd.ops.add(T14, T32)
    S34 = fd.define_scalar(0.79788, dtype=DataType.Double)
    T35 = fd.ops.mul(T33, S34)
    T36 = fd.ops.tanh(T35)
    S37 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S38 = fd.define_scalar(0.50000, dtype=DataType.Double)
    T39 = fd.ops.mul(T14, S38)
    T40 = fd.ops.add(T36, S37)
    T41 = fd.ops.mul(T39, T40)
    T42 = fd.ops.mul(T41, T28)
    T43 = fd.ops.cast(T42, dtype=DataType.BFloat16)
    fd.add_output(T43)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.testing.make_tensor((2, 13, 44), dtype=torch.bfloat16, device='cuda:0'),
]
fd.execute(inputs)
