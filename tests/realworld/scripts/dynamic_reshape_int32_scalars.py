# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/test_python_frontend.py test_dynamic_reshape:
# define_tensor with positional shape and contiguity, fd.ops.size(x, 0), two runtime
# Int32 scalars (define_scalar(dtype=...) without a value) as the new sizes of a reshape,
# and plain Python ints for them at execute time.
import torch
from nvfuser import FusionDefinition, DataType


def dynamic_reshape(fd: FusionDefinition) -> None:
    x = fd.define_tensor([-1, -1], [True, True])
    d0 = fd.ops.size(x, 0)
    d1 = fd.define_scalar(dtype=DataType.Int32)
    d2 = fd.define_scalar(dtype=DataType.Int32)
    y = fd.ops.reshape(x, [d0, d1, d2])
    z = fd.ops.mul(y, y)
    fd.add_output(z)


with FusionDefinition() as fd:
    dynamic_reshape(fd)

x = torch.rand(6, 20, device="cuda")
fd.execute([x, 4, 5])
