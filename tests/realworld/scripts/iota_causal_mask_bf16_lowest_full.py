# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser issue #4670 (test_repro.py test_issue4670): a causal mask built
# from two iotas with positional (length, start, step) arguments, broadcast with
# is_broadcast_dim and expanded with shapes mixing Int constants and fd.ops.size(), a gt
# mask, and full() of a BFloat16 scalar -3.38953e38 (bf16's lowest) selected by where
# against a Double zero. No inputs. Shrunk from 128x129 to 8x9.
import torch
from nvfuser import FusionDefinition, DataType


def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    S0 = fd.define_scalar(9, dtype=DataType.Int)
    S1 = fd.define_scalar(0, dtype=DataType.Int)
    S2 = fd.define_scalar(1, dtype=DataType.Int)
    T3 = fd.ops.iota(S0, S1, S2, dtype=DataType.Int)
    T4 = fd.ops.broadcast(T3, is_broadcast_dim=[True, False])
    S5 = fd.define_scalar(8, dtype=DataType.Int)
    S6 = fd.ops.size(T3, dim=0)
    T8 = fd.ops.expand(T4, shape=[S5, S6])
    S9 = fd.define_scalar(8, dtype=DataType.Int)
    S10 = fd.define_scalar(0, dtype=DataType.Int)
    S11 = fd.define_scalar(1, dtype=DataType.Int)
    T12 = fd.ops.iota(S9, S10, S11, dtype=DataType.Int)
    T13 = fd.ops.broadcast(T12, is_broadcast_dim=[False, True])
    S14 = fd.ops.size(T12, dim=0)
    S15 = fd.define_scalar(9, dtype=DataType.Int)
    T17 = fd.ops.expand(T13, shape=[S14, S15])
    T18 = fd.ops.gt(T8, T17)
    T19 = fd.ops.broadcast(T3, is_broadcast_dim=[True, False])
    S20 = fd.define_scalar(8, dtype=DataType.Int)
    T22 = fd.ops.expand(T19, shape=[S20, S6])
    T23 = fd.ops.broadcast(T12, is_broadcast_dim=[False, True])
    S24 = fd.define_scalar(9, dtype=DataType.Int)
    T26 = fd.ops.expand(T23, shape=[S14, S24])
    T27 = fd.ops.sub(T22, T26)
    S28 = fd.define_scalar(1, dtype=DataType.Int)
    T29 = fd.ops.ge(T27, S28)
    S30 = fd.define_scalar(-3.38953e38, dtype=DataType.BFloat16)
    S31 = fd.define_scalar(8, dtype=DataType.Int)
    S32 = fd.define_scalar(9, dtype=DataType.Int)
    T34 = fd.ops.full(shape=[S31, S32], fill_value=S30, dtype=DataType.BFloat16)
    S35 = fd.define_scalar(0.00000, dtype=DataType.Double)
    T36 = fd.ops.where(T29, T34, S35)
    fd.add_output(T18)
    fd.add_output(T36)


with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = []
fd.validate(inputs)
