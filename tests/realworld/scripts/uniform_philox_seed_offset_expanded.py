# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #3607 (Thunder randomness tests after replace_uniform,
# 2024): seed and offset passed in as runtime Int scalars (define_scalar(None, ...)),
# fd.ops.uniform with rng_seed/rng_offset to rebuild a dropout mask in the backward, a
# Double grad that is an expanded scalar (shape [2, N], contiguity [None, None]: stride 0
# everywhere), scaled, masked and reduced over the rows.
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id24(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[2, 300], contiguity=[None, None], dtype=DataType.Double, is_cpu=False, stride_order=[1, 0])
    S1 = fd.define_scalar(None, dtype=DataType.Int)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    T3 = fd.define_tensor(shape=[300], contiguity=[True], dtype=DataType.Double, is_cpu=False, stride_order=[0])
    T4 = fd.define_tensor(shape=[2, 300], contiguity=[True, True], dtype=DataType.Double, is_cpu=False, stride_order=[1, 0])
    S5 = fd.define_scalar(1.00000, dtype=DataType.Double)
    T6 = fd.ops.mul(S5, T0)
    S7 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T8 = fd.ops.mul(S7, T6)
    S9 = fd.define_scalar(0.00000, dtype=DataType.Double)
    S10 = fd.define_scalar(1.00000, dtype=DataType.Double)
    S11 = fd.define_scalar(2, dtype=DataType.Int)
    S12 = fd.define_scalar(300, dtype=DataType.Int)
    T13 = fd.ops.uniform(S9, S10, shape=[S11, S12], rng_seed=S1, rng_offset=S2, dtype=DataType.Double)
    S14 = fd.define_scalar(0.500000, dtype=DataType.Double)
    T15 = fd.ops.lt(T13, S14)
    T16 = fd.ops.cast(T15, dtype=DataType.Double)
    T17 = fd.ops.mul(T8, T16)
    S18 = fd.define_scalar(2.00000, dtype=DataType.Double)
    T19 = fd.ops.mul(T17, S18)
    T20 = fd.ops.broadcast_in_dim(T3, shape=[2, 300], broadcast_dims=[1])
    T21 = fd.ops.mul(T19, T20)
    T22 = fd.ops.mul(T19, T4)
    T23 = fd.ops.sum(T22, dims=[0], keepdim=False, dtype=DataType.Null)
    fd.add_output(T21)
    fd.add_output(T23)
    fd.add_output(T15)

with FusionDefinition() as fd:
    nvfuser_fusion_id24(fd)

inputs = [
    torch.randn((1,), dtype=torch.float64, device='cuda:0').as_strided((2, 300), (0, 0)),
    29,
    4,
    torch.testing.make_tensor((300,), dtype=torch.float64, device='cuda:0'),
    torch.testing.make_tensor((2, 300), dtype=torch.float64, device='cuda:0'),
]
fd.execute(inputs)
