# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on a Thunder trace of torch.optim.AdamW's single-tensor step (_single_tensor_adam
# with decoupled weight decay, as in NVIDIA/Fuser issue #2112 and lightning-thunder issue
# #657) on a [4096, 4096] float32 weight: the step count an Int scalar input and the
# learning rate a Double scalar input, bias corrections computed on scalars (pow of a
# Double by the Int step, sqrt), exp_avg.lerp_(grad, 1 - beta1) as fd.ops.lerp,
# exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2) as fd.ops.addcmul, and the three
# updated states written back in place with add_output(..., alias_input=...).
# real-sizes: 20=4096 64=4096
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[20, 64], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[20, 64], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[20, 64], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[20, 64], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    S4 = fd.define_scalar(None, dtype=DataType.Int)
    S5 = fd.define_scalar(None, dtype=DataType.Double)
    S6 = fd.define_scalar(0.0100000, dtype=DataType.Double)
    S7 = fd.ops.mul(S5, S6)
    S8 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S9 = fd.ops.sub(S8, S7)
    T10 = fd.ops.mul(T0, S9)
    S11 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T12 = fd.ops.lerp(T2, T1, S11)
    S13 = fd.define_scalar(0.999000, dtype=DataType.Double)
    T14 = fd.ops.mul(T3, S13)
    S15 = fd.define_scalar(0.00100000, dtype=DataType.Double)
    T16 = fd.ops.addcmul(T14, T1, T1, S15)
    S17 = fd.define_scalar(0.900000, dtype=DataType.Double)
    S18 = fd.ops.cast(S4, dtype=DataType.Double)
    S19 = fd.ops.pow(S17, S18)
    S20 = fd.ops.sub(S8, S19)
    S21 = fd.ops.pow(S13, S18)
    S22 = fd.ops.sub(S8, S21)
    S23 = fd.ops.div(S5, S20)
    S24 = fd.ops.sqrt(S22)
    T25 = fd.ops.sqrt(T16)
    T26 = fd.ops.div(T25, S24)
    S27 = fd.define_scalar(1.00000e-08, dtype=DataType.Double)
    T28 = fd.ops.add(T26, S27)
    T29 = fd.ops.div(T12, T28)
    T30 = fd.ops.mul(T29, S23)
    T31 = fd.ops.sub(T10, T30)
    fd.add_output(T31, alias_input=T0)
    fd.add_output(T12, alias_input=T2)
    fd.add_output(T16, alias_input=T3)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.randn((20, 64), dtype=torch.float32, device='cuda:0'),
    torch.randn((20, 64), dtype=torch.float32, device='cuda:0'),
    torch.randn((20, 64), dtype=torch.float32, device='cuda:0') * 0.1,
    torch.rand((20, 64), dtype=torch.float32, device='cuda:0') * 0.01,
    7,
    0.0003,
]
fd.execute(inputs)
