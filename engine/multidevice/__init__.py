"""Multi-device fusions (nvFuser's multidevice API, nvfuser_direct spelling).

    mesh = engine.multidevice.DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        ...
        tv.set_device_mesh(mesh)
        tv.outer_split(0, d)
        tv.axis(0).parallelize(ParallelType.mesh_x)
    outs = fd.execute(local_shards)        # on each rank: this rank's shards of the outputs
"""

from engine import compile as _compile
from engine.frontend import definition as _definition
from engine.multidevice.communicator import Communicator
from engine.multidevice.compiled import MultiDeviceCompiledFusion, compile_multidevice
from engine.multidevice.execute import execute, execute_on_rank, program_of
from engine.multidevice.mesh import DeviceMesh
from engine.multidevice.program import MultiDeviceProgram
from engine.multidevice.sharding import MultiDeviceError, shard_tensor
from engine.multidevice.sharding import describe as describe_sharding
from engine.multidevice.timeline import StepTime

__all__ = ["Communicator", "DeviceMesh", "MultiDeviceCompiledFusion", "compile_multidevice", "MultiDeviceError", "MultiDeviceProgram", "StepTime", "describe_sharding",
           "execute", "program_of", "shard_tensor"]

# fd.execute and compile_fusion hand a fusion with device meshes to this package.
_definition.MULTIDEVICE_RUN = execute_on_rank
_compile.MULTIDEVICE_COMPILE = compile_multidevice
