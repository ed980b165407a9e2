# Tensor-parallel MLP on 2 devices (Megatron style): linear -> gelu -> linear, the first
# weight and bias sharded by columns (output features) and the second weight by rows (input
# features), so each device computes a partial sum of the output and one Allreduce completes
# it. Run it with `fusescope run multidevice_tp_mlp --ranks 2 --backend reference`.
import torch
import nvfuser_direct as nvfuser
from nvfuser_direct import FusionDefinition, DataType

d = 2  # devices
h = 8  # hidden size (the MLP's inner size is 4 * h)


def define(fd: FusionDefinition) -> None:
    x = fd.define_tensor([-1, h], dtype=DataType.Float, contiguity=True)
    w1 = fd.define_tensor([4 * h, h], dtype=DataType.Float, contiguity=True)
    b1 = fd.define_tensor([4 * h], dtype=DataType.Float, contiguity=True)
    w2 = fd.define_tensor([h, 4 * h], dtype=DataType.Float, contiguity=True)
    b2 = fd.define_tensor([h], dtype=DataType.Float, contiguity=True)
    y = fd.ops.gelu(fd.ops.linear(x, w1, b1))
    z = fd.ops.linear(y, w2, b2)
    fd.add_output(z)
    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
    for tv in [x, w1, b1, w2, b2]:
        tv.set_device_mesh(mesh)
    for tv, axis in [(w1, 0), (b1, 0), (w2, 1)]:
        tv.outer_split(axis, d)
        tv.axis(axis).parallelize(nvfuser.ParallelType.mesh_x)


with FusionDefinition() as fd:
    define(fd)

# Unsharded tensors: each rank takes its shard (engine.multidevice.shard_tensor).
inputs = [torch.randn(8, h), torch.randn(4 * h, h), torch.randn(4 * h), torch.randn(h, 4 * h), torch.randn(h)]
