# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of a mixed-precision AdamW step (fp32 master weights and
# moments, bf16 gradients and bf16 model weights, as in LitGPT / Megatron-style training)
# for a Llama-3-8B MLP weight [14336, 4096]: the gradient upcast and scaled by the global
# clip coefficient min(max_norm / (total_norm + 1e-6), 1) computed from a 0-dim float
# total-norm tensor (a scalar divided by a tensor, then fd.ops.minimum), decoupled weight
# decay, moments and master weight written back in place, the bf16 copy of the new weight
# returned; lr, bias corrections and step come in as Double scalar inputs.
# real-sizes: 56=14336 16=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id8(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[56, 16], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[56, 16], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[56, 16], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[56, 16], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    S5 = fd.define_scalar(None, dtype=DataType.Double)
    S6 = fd.define_scalar(None, dtype=DataType.Double)
    S7 = fd.define_scalar(None, dtype=DataType.Double)
    S8 = fd.define_scalar(1.00000e-06, dtype=DataType.Double)
    T9 = fd.ops.add(T4, S8)
    S10 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T11 = fd.ops.div(S10, T9)
    T12 = fd.ops.minimum(T11, S10)
    T13 = fd.ops.cast(T1, dtype=DataType.Float)
    T14 = fd.ops.mul(T13, T12)
    S15 = fd.define_scalar(0.100000, dtype=DataType.Double)
    S16 = fd.ops.mul(S5, S15)
    S17 = fd.ops.sub(S10, S16)
    T18 = fd.ops.mul(T0, S17)
    S19 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T20 = fd.ops.mul(T2, S19)
    S21 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T22 = fd.ops.mul(T14, S21)
    T23 = fd.ops.add(T20, T22)
    S24 = fd.define_scalar(0.950000, dtype=DataType.Double)
    T25 = fd.ops.mul(T3, S24)
    T26 = fd.ops.mul(T14, T14)
    S27 = fd.define_scalar(0.0500000, dtype=DataType.Double)
    T28 = fd.ops.mul(T26, S27)
    T29 = fd.ops.add(T25, T28)
    T30 = fd.ops.div(T23, S6)
    T31 = fd.ops.div(T29, S7)
    T32 = fd.ops.sqrt(T31)
    S33 = fd.define_scalar(1.00000e-08, dtype=DataType.Double)
    T34 = fd.ops.add(T32, S33)
    T35 = fd.ops.div(T30, T34)
    T36 = fd.ops.mul(T35, S5)
    T37 = fd.ops.sub(T18, T36)
    T38 = fd.ops.cast(T37, dtype=DataType.BFloat16)
    fd.add_output(T37, alias_input=T0)
    fd.add_output(T23, alias_input=T2)
    fd.add_output(T29, alias_input=T3)
    fd.add_output(T38)


with FusionDefinition() as fd:
    nvfuser_fusion_id8(fd)

inputs = [
    torch.randn((56, 16), dtype=torch.float32, device='cuda:0'),
    torch.randn((56, 16), dtype=torch.bfloat16, device='cuda:0'),
    torch.randn((56, 16), dtype=torch.float32, device='cuda:0') * 0.1,
    torch.rand((56, 16), dtype=torch.float32, device='cuda:0') * 0.01,
    torch.tensor(3.5, dtype=torch.float32, device='cuda:0'),
    0.0003,
    0.271,
    0.0975,
]
fd.execute(inputs)
