# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on the jittable Adam of Lightning-AI/lightning-thunder issue #657 (the step kept
# as a 0-dim float tensor on the device, `step_t.add_(1)`, bias corrections 1 - 0.9**step
# as pow of a Python float by that tensor, exp_avg_sq.sqrt() / bias_correction2.sqrt() +
# 1e-8, param.addcdiv_(exp_avg, denom, value=-step_size)) for one [1024, 1024] float32
# parameter: the new step, param, exp_avg and exp_avg_sq are all written back in place.
# real-sizes: 24=1024 40=1024
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id1(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
    T4 = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=False)
    S5 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T6 = fd.ops.add(T4, S5)
    S7 = fd.define_scalar(0.900000, dtype=DataType.Double)
    T8 = fd.ops.mul(T2, S7)
    S9 = fd.define_scalar(0.100000, dtype=DataType.Double)
    T10 = fd.ops.mul(T1, S9)
    T11 = fd.ops.add(T8, T10)
    S12 = fd.define_scalar(0.999000, dtype=DataType.Double)
    T13 = fd.ops.mul(T3, S12)
    S14 = fd.define_scalar(0.00100000, dtype=DataType.Double)
    T15 = fd.ops.mul(S14, T1)
    T16 = fd.ops.mul(T15, T1)
    T17 = fd.ops.add(T13, T16)
    T18 = fd.ops.pow(S7, T6)
    T19 = fd.ops.sub(S5, T18)
    T20 = fd.ops.pow(S12, T6)
    T21 = fd.ops.sub(S5, T20)
    S22 = fd.define_scalar(0.00100000, dtype=DataType.Double)
    T23 = fd.ops.div(S22, T19)
    T24 = fd.ops.sqrt(T21)
    T25 = fd.ops.sqrt(T17)
    T26 = fd.ops.div(T25, T24)
    S27 = fd.define_scalar(1.00000e-08, dtype=DataType.Double)
    T28 = fd.ops.add(T26, S27)
    T29 = fd.ops.neg(T23)
    T30 = fd.ops.div(T11, T28)
    T31 = fd.ops.mul(T29, T30)
    T32 = fd.ops.add(T0, T31)
    fd.add_output(T6, alias_input=T4)
    fd.add_output(T11, alias_input=T2)
    fd.add_output(T17, alias_input=T3)
    fd.add_output(T32, alias_input=T0)


with FusionDefinition() as fd:
    nvfuser_fusion_id1(fd)

inputs = [
    torch.randn((24, 40), dtype=torch.float32, device='cuda:0'),
    torch.randn((24, 40), dtype=torch.float32, device='cuda:0'),
    torch.zeros((24, 40), dtype=torch.float32, device='cuda:0'),
    torch.zeros((24, 40), dtype=torch.float32, device='cuda:0'),
    torch.tensor(0.0, dtype=torch.float32, device='cuda:0'),
]
fd.execute(inputs)
