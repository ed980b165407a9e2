# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/opinfo opinfos (trunc_div, mod, remainder, fmod,
# truediv on integers, abs and neg on integers, bitwise shifts) and
# test_python_frontend.py test_integer_division: C-style truncating division of Int64
# tensors with negative values, the sign rules of mod/remainder/fmod, truediv to float.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id31(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int, is_cpu=False)
    T2 = fd.ops.div(T0, T1)
    T3 = fd.ops.mod(T0, T1)
    T4 = fd.ops.remainder(T0, T1)
    T5 = fd.ops.fmod(T0, T1)
    T6 = fd.ops.truediv(T0, T1)
    T7 = fd.ops.abs(T0)
    T8 = fd.ops.neg(T1)
    S9 = fd.define_scalar(3, dtype=DataType.Int)
    T10 = fd.ops.bitwise_right_shift(T0, S9)
    T11 = fd.ops.bitwise_left_shift(T7, S9)
    T12 = fd.ops.add(T2, T3)
    T13 = fd.ops.mul(T4, T5)
    T14 = fd.ops.sub(T12, T13)
    T15 = fd.ops.add(T10, T11)
    T16 = fd.ops.mul(T8, T15)
    fd.add_output(T14)
    fd.add_output(T6)
    fd.add_output(T16)


with FusionDefinition() as fd:
    nvfuser_fusion_id31(fd)

inputs = [
    torch.randint(-1000, 1000, (512,), dtype=torch.int64, device='cuda:0'),
    torch.tensor([-7, -3, 2, 5, 9, 11, -13, 4] * 64, dtype=torch.int64, device='cuda:0'),
]
fd.execute(inputs)
