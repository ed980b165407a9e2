"""`compile_fusion` of a multi-device fusion: this rank's program, with each region compiled
for the local sizes it will see.

The sizes a region sees after communications follow from the shards' sizes without
communicating: a region's outputs come from evaluating it on meta tensors, an Allgather
multiplies the gathered dimension by the team's size, a ReduceScatter or a local cut divides
it, the others keep it. `run` executes the program on this rank (engine.multidevice.runtime).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
import torch.distributed as dist

from engine.compile import CompiledFusion, CompiledSegment, compile_fusion
from engine.config import Options
from engine.errors import CompileError
from engine.host.hir import HostIrContainer
from engine.multidevice.communicator import Communicator
from engine.multidevice.execute import program_of
from engine.multidevice.program import Communication, MultiDeviceProgram, Region
from engine.multidevice.runtime import region_scalars, run_program
from engine.multidevice.sharding import mesh_of, sharded_dims
from engine.multidevice.timeline import StepTime
from engine.reference import evaluate


def _meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x


def _after(c: Communication, x: torch.Tensor, rank: int) -> torch.Tensor | None:
    """The local tensor `c` gives this rank, as a meta tensor of the right shape."""
    r = c.resharding
    mesh = mesh_of(c.output)
    if mesh is None or not mesh.has(rank):
        return None
    shape = list(x.shape)
    if r.kind in ("Allgather", "ReduceScatter", "ShardByDevice"):
        tv = c.input if r.kind == "Allgather" else c.output
        dim, split = next((dim, s.split) for dim, s in sharded_dims(tv) if s.pt == r.pt)
        d = mesh.extent(r.pt)
        if r.kind == "Allgather":
            shape[dim] = shape[dim] * d if split else d
        else:
            shape[dim] = shape[dim] // d if split else 1
    return torch.empty(shape, dtype=x.dtype, device="meta")


@dataclass
class MultiDeviceCompiledFusion:
    """This rank's program of a multi-device fusion, its regions compiled for local sizes.

    `segments`: every region's segments in run order (`region_of` says which region each
    belongs to); `host_ir`: the program in nvFuser's host-IR text, with this rank's teams;
    `run(inputs)`: this rank's outputs of its input shards."""

    program: MultiDeviceProgram
    rank: int
    compiled: dict[int, CompiledFusion] = field(default_factory=dict)
    backend_name: str = "NCCL"
    last_timeline: list[StepTime] = field(default_factory=list)

    @property
    def fusion(self) -> Any:
        return self.program.fusion

    @property
    def host_ir(self) -> HostIrContainer:
        return self.program.host_ir(self.rank, self.backend_name)

    @property
    def segments(self) -> list[CompiledSegment]:
        return [s for r in self.program.regions if r.index in self.compiled for s in self.compiled[r.index].segments]

    def region_of(self, seg: CompiledSegment) -> int:
        return next(i for i, cf in self.compiled.items() if any(s is seg for s in cf.segments))

    @property
    def trace(self) -> Any:
        return next(iter(self.compiled.values())).trace if self.compiled else None

    @property
    def segmented(self) -> str:
        """The regions and communications in run order, each region's segments listed."""
        lines = [f"Multi-device program (rank {self.rank}): {len(self.program.regions)} regions, "
                 f"{len(self.program.communications)} communications"]
        for step in self.program.steps:
            if isinstance(step, Region):
                cf = self.compiled.get(step.index)
                segs = ", ".join(f"{s.id} ({s.scheduler})" for s in cf.segments) if cf else "not on this rank"
                lines.append(f"region {step.index} [{step.mesh}]: {len(step.exprs)} exprs; segments: {segs}")
            else:
                team = " ".join(str(d) for d in step.team(self.rank))
                lines.append(f"Communication {step.number} ({step.kind}, team=({team})): "
                             f"{step.input.short_name} -> {step.output.short_name}")
        return "\n".join(lines) + "\n"

    @property
    def graph(self) -> Any:
        """Regions and communications as nodes, the tensors passed as edges."""
        g = nx.DiGraph()
        made: dict[int, str] = {}
        for step in self.program.steps:
            if isinstance(step, Region):
                node = f"region {step.index}"
                g.add_node(node, kind="region", exprs=len(step.exprs))
                ins, outs = step.inputs, step.outputs
            else:
                node = f"Communication {step.number}"
                g.add_node(node, kind="communication", type=step.kind, team=step.team(self.rank))
                ins, outs = [step.input], [step.output]
            for v in ins:
                if id(v) in made:
                    g.add_edge(made[id(v)], node, tensor=getattr(v, "short_name", str(v)))
            for v in outs:
                made[id(v)] = node
        return g

    def run(self, inputs: Sequence[Any], backend: str = "emulate", *, timeline: bool = False) -> list[Any]:
        tl: list[StepTime] | None = [] if timeline else None
        outs = run_program(self.program, list(inputs), backend=backend, timeline=tl)
        if tl is not None:
            self.last_timeline = tl
        return outs


def compile_multidevice(fd: Any, inputs: Sequence[Any], options: Options | None = None,
                        rank: int | None = None) -> MultiDeviceCompiledFusion:
    """Compile this rank's regions of `fd` for its local `inputs` (shards)."""
    program = program_of(fd)
    if program is None:
        raise CompileError("no tensor of this fusion has a device mesh")
    if rank is None:
        # A process group set up (or to be set up from the torchrun environment) gives the
        # rank; a lone process without either compiles as rank 0.
        if dist.is_initialized() or "RANK" in os.environ:
            rank = Communicator.instance().rank()
        else:
            rank = 0
    if len(inputs) != len(program.inputs):
        raise CompileError(f"the fusion takes {len(program.inputs)} inputs, got {len(inputs)}")
    cuda = any(getattr(x, "is_cuda", False) for x in inputs)
    out = MultiDeviceCompiledFusion(program, rank, backend_name="NCCL" if cuda else "GLOO")
    env: dict[int, Any] = {id(v): _meta(x) for v, x in zip(program.inputs, inputs)}
    for step in program.steps:
        if isinstance(step, Communication):
            x = env.get(id(step.input))
            env[id(step.output)] = _after(step, x, rank) if x is not None else None
            continue
        if step.mesh is not None and not step.mesh.has(rank):
            continue
        args = [env.get(id(v)) for v in step.inputs]
        if any(a is None for a in args):
            continue  # its inputs come from another mesh's devices: sizes unknown here
        args += region_scalars(step, program, list(inputs))
        try:
            outs = evaluate(step.fusion, args, device=torch.device("meta"))
        except Exception as e:  # an op torch cannot run on meta tensors: no sizes past here
            raise CompileError(f"region {step.index}: its output sizes could not be derived ({e})") from e
        out.compiled[step.index] = compile_fusion(step.fusion, args, options)
        env.update({id(v): o for v, o in zip(step.outputs, outs)})
    return out
