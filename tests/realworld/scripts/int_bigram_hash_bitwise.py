# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on hashed n-gram embedding ids (bigram hash buckets over token ids, as in hash
# embeddings of byte/token models) written with the integer ops the frontend tests in
# NVIDIA/Fuser tests/python/direct/test_python_frontend.py (bitwise_and/or/xor, shifts,
# test_right_shift_arithmetic) and Thunder's remainder: the previous token from a pad+slice,
# a multiplicative hash, xor, a mask, a left/right shift mix, remainder into the bucket
# count, int32 ids out; fmod next to remainder on signed offsets.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id4(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int32, is_cpu=False)
    S2 = fd.define_scalar(0, dtype=DataType.Int)
    T3 = fd.ops.pad(T0, [1, 0, 0, 0], S2)
    T4 = fd.ops.slice(T3, start_indices=[0, 0], end_indices=[4, 24], strides=[1, 1])
    S5 = fd.define_scalar(1000003, dtype=DataType.Int)
    T6 = fd.ops.mul(T4, S5)
    T7 = fd.ops.bitwise_xor(T6, T0)
    S8 = fd.define_scalar(2147483647, dtype=DataType.Int)
    T9 = fd.ops.bitwise_and(T7, S8)
    S10 = fd.define_scalar(5, dtype=DataType.Int)
    T11 = fd.ops.bitwise_left_shift(T9, S10)
    S12 = fd.define_scalar(13, dtype=DataType.Int)
    T13 = fd.ops.bitwise_right_shift(T9, S12)
    T14 = fd.ops.bitwise_or(T11, T13)
    S15 = fd.define_scalar(4093, dtype=DataType.Int)
    T16 = fd.ops.remainder(T14, S15)
    T17 = fd.ops.cast(T16, dtype=DataType.Int32)
    S18 = fd.define_scalar(7, dtype=DataType.Int32)
    T19 = fd.ops.remainder(T1, S18)
    T20 = fd.ops.fmod(T1, S18)
    T21 = fd.ops.sub(T19, T20)
    T22 = fd.ops.bitwise_not(T1)
    T23 = fd.ops.ne(T21, S2)
    fd.add_output(T17)
    fd.add_output(T19)
    fd.add_output(T20)
    fd.add_output(T22)
    fd.add_output(T23)


with FusionDefinition() as fd:
    nvfuser_fusion_id4(fd)

inputs = [
    torch.randint(0, 50257, (4, 24), dtype=torch.int64, device='cuda:0'),
    torch.randint(-100, 100, (4, 24), dtype=torch.int32, device='cuda:0'),
]
fd.execute(inputs)
