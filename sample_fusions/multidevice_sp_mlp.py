# Sequence-parallel MLP on 2 devices with the Allgather overlapped: the tokens of the input and
# the output are sharded over the devices, so the input is gathered (Allgather) before the
# MLP and the output reduced and scattered (ReduceScatter) after it; the input's stream split
# gathers it in 2 chunks, each overlapping the MLP's compute on the chunk before. Run it with
# `fusescope run multidevice_sp_mlp --ranks 2 --backend reference`.
import torch
import nvfuser_direct as nvfuser
from nvfuser_direct import FusionDefinition, DataType

d = 2  # devices
h = 8  # hidden size (the MLP's inner size is 4 * h)
chunks = 2  # stream chunks of the overlapped Allgather


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
    for tv in [x, w1, b1, w2, b2, z]:
        tv.set_device_mesh(mesh)
    # Tokens: x's and z's axis 0; x is gathered in `chunks` pieces, each on a stream.
    x.outer_split(0, d)
    x.axis(0).parallelize(nvfuser.ParallelType.mesh_x)
    x.outer_split(1, chunks)
    x.axis(1).parallelize(nvfuser.ParallelType.stream)
    # Features: w1's and b1's axis 0 (columns), w2's axis 1 (rows).
    for tv, axis in [(w1, 0), (b1, 0), (w2, 1), (z, 0)]:
        tv.outer_split(axis, d)
        tv.axis(axis).parallelize(nvfuser.ParallelType.mesh_x)

with FusionDefinition() as fd:
    define(fd)

# Unsharded tensors: each rank takes its shard (engine.multidevice.shard_tensor).
inputs = [torch.randn(8, h), torch.randn(4 * h, h), torch.randn(4 * h), torch.randn(h, 4 * h), torch.randn(h)]
