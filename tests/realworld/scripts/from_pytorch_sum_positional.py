# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/test_python_frontend.py test_basic,
# test_basic_fp16 and test_cast_scalar: fd.from_pytorch(inputs[i]) inside a fusion
# function, sum(T, [-1], False, DataType.Float) with every argument positional, a Double
# constant cast to Int32 and an Int32 sum of integer tensors.
import torch
from nvfuser_direct import FusionDefinition, DataType

inputs = [
    torch.ones(3, 5, 16, device="cuda", dtype=torch.float16),
    torch.randn(3, 5, 16, device="cuda", dtype=torch.float16),
    torch.randint(-4, 4, (3, 5, 16), device="cuda", dtype=torch.int32),
]


def fusion_func(fd: FusionDefinition):
    t0 = fd.from_pytorch(inputs[0])
    t1 = fd.from_pytorch(inputs[1])
    i0 = fd.from_pytorch(inputs[2])
    c0 = fd.define_scalar(3.0)

    t2 = fd.ops.add(t0, t1)
    t3 = fd.ops.mul(t2, c0)
    t4 = fd.ops.sum(t3, [-1], False, DataType.Float)
    t5 = fd.ops.cast(t4, DataType.Half)

    c1 = fd.ops.cast(c0, DataType.Int32)
    i1 = fd.ops.mul(i0, c1)
    i2 = fd.ops.sum(i1, [-1], False, DataType.Int32)

    fd.add_output(t5)
    fd.add_output(i2)


with FusionDefinition() as fd:
    fusion_func(fd)

nvf_out = fd.execute(inputs)
