# ruff: noqa
# A tensor-parallel MLP in nvfuser_direct's multidevice spelling (read by the loader, never run).
import torch
import nvfuser_direct as nvfuser
from nvfuser_direct import FusionDefinition, DataType

d = 2
h = 8


def define(fd: FusionDefinition) -> None:
    x = fd.define_tensor([-1, h], dtype=DataType.Float)
    w1 = fd.define_tensor([4 * h, h], dtype=DataType.Float)
    w2 = fd.define_tensor([h, 4 * h], dtype=DataType.Float)
    y = fd.ops.relu(fd.ops.linear(x, w1))
    z = fd.ops.linear(y, w2)
    fd.add_output(z)
    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
    for tv in [x, w1, w2]:
        tv.set_device_mesh(mesh)
    w1.outer_split(0, d)
    w1.axis(0).parallelize(nvfuser.ParallelType.mesh_x)
    w2.split(1, d, inner_split=False)
    w2.axis(1).parallelize(nvfuser.ParallelType.mesh_x)


with FusionDefinition() as fd:
    define(fd)

inputs = [torch.randn(6, h), torch.randn(4 * h, h), torch.randn(h, 4 * h)]
