# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on nvFuser's python tests that build one fusion function for several
# configurations (tests/python/test_normalization.py style): the function takes the
# FusionDefinition and then the epsilon and the normalized width, and the with block calls
# it with them, `fusion_func(fd, 1e-5, 40)`. A layer norm forward without affine terms,
# its width used both as a static size and as the divisor of the mean.
import torch
from nvfuser import FusionDefinition, DataType


def fusion_func(fd: FusionDefinition, eps, n, dtype=DataType.Float):
    T0 = fd.define_tensor(shape=[-1, n], contiguity=[True, True], dtype=dtype, is_cpu=False)
    T1 = fd.ops.sum(T0, dims=[1], keepdim=True)
    S2 = fd.define_scalar(1.0 / n, dtype=DataType.Double)
    T3 = fd.ops.mul(T1, S2)
    T4 = fd.ops.sub(T0, T3)
    T5 = fd.ops.sum(fd.ops.mul(T4, T4), dims=[1], keepdim=True)
    T6 = fd.ops.add(fd.ops.mul(T5, S2), fd.define_scalar(eps, dtype=DataType.Double))
    T7 = fd.ops.mul(T4, fd.ops.rsqrt(T6))
    fd.add_output(T7)


with FusionDefinition() as fd:
    fusion_func(fd, 1e-5, 40)

inputs = [torch.randn(5, 40, device="cuda")]
out = fd.execute(inputs)
