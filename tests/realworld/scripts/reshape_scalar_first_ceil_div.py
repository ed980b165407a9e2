# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/test_python_frontend.py test_reshape_dynamic:
# a runtime Int scalar given BEFORE the tensor in the inputs, the inferred size of a
# reshape worked out with scalar ops (signbit, fmod, ne, bitwise_and on Bools, reciprocal,
# a Bool cast to Int), reshape(new_shape=[...]) and sum(keep_dim=, dtype=DataType.Null).
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id3(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(None, dtype=DataType.Int)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[2, 1, 0])
    S2 = fd.define_scalar(1, dtype=DataType.Int)
    S3 = fd.ops.mul(S2, S0)
    S4 = fd.ops.signbit(S3)
    S5 = fd.define_scalar(False, dtype=DataType.Bool)
    S6 = fd.ops.ne(S4, S5)
    S7 = fd.define_scalar(240, dtype=DataType.Int)
    S8 = fd.ops.fmod(S7, S3)
    S9 = fd.ops.cast(S8, dtype=DataType.Int)
    S10 = fd.define_scalar(0, dtype=DataType.Int)
    S11 = fd.ops.ne(S9, S10)
    S12 = fd.ops.bitwise_and(S6, S11)
    S13 = fd.define_scalar(240, dtype=DataType.Int)
    S14 = fd.ops.reciprocal(S3)
    S15 = fd.ops.mul(S13, S14)
    S16 = fd.ops.cast(S12, dtype=DataType.Int)
    S17 = fd.ops.sub(S15, S16)
    T18 = fd.ops.reshape(T1, new_shape=[S0, S17])
    T19 = fd.ops.sum(T18, dims=[1], keep_dim=False, dtype=DataType.Null)
    fd.add_output(T19)


with FusionDefinition() as fd:
    nvfuser_fusion_id3(fd)

inputs = [
    12,
    torch.randn((240,), dtype=torch.float32, device='cuda:0').as_strided((3, 8, 10), (80, 10, 1)),
]
fd.execute(inputs)
