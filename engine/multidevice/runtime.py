"""Running a MultiDeviceProgram on this rank: regions through the single-device pipeline,
communications through torch.distributed collectives.

Each rank runs every step in order. A region runs on the ranks of its mesh; a communication
on the ranks of its team. A tensor this rank does not hold (off its mesh) is absent; an
output this rank does not hold comes back as an empty tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from engine.compile import _signature, compile_fusion
from engine.dtypes import to_torch
from engine.errors import ExecutionError
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.multidevice.communicator import REDUCE_OPS, Communicator
from engine.multidevice.overlap import reads
from engine.multidevice.pipeline import run_pipeline
from engine.multidevice.program import Communication, MultiDeviceProgram, Region
from engine.multidevice.ring import run_ring
from engine.multidevice.sharding import MultiDeviceError, mesh_of, sharded_dims
from engine.multidevice.timeline import Clock, StepTime
from engine.ops.common import full_extent
from engine.reference import check_input_layout, evaluate

__all__ = ["run_program", "run_communication", "run_region", "region_scalars", "whole_sizes"]


def _dim_of(tv: Any, pt: Any) -> tuple[int, bool]:
    for dim, s in sharded_dims(tv):
        if s.pt == pt:
            return dim, s.split
    raise MultiDeviceError(f"{tv.short_name} is not sharded on {pt}")


def _ordered(parts: list[torch.Tensor], team: list[int]) -> list[torch.Tensor]:
    """all_gather fills its list by group rank (ascending global rank); put it in team order."""
    by_rank = sorted(team)
    return [parts[by_rank.index(d)] for d in team]


def run_communication(c: Communication, x: torch.Tensor | None, comm: Communicator,
                      in_place: bool = False) -> torch.Tensor | None:
    """This rank's result of `c` on its `x`; `in_place`: `x` is read by nothing else, so an
    Allreduce may reduce into it."""
    rank = comm.rank()
    r = c.resharding
    if comm.backend() == "gloo" and x is not None and x.is_cuda and r.kind != "ShardByDevice":
        # gloo communicates host memory: a CUDA tensor goes through the host and back.
        out = run_communication(c, x.cpu(), comm)
        return None if out is None else out.to(x.device)
    if r.kind == "ShardByDevice":
        dim, split = _dim_of(c.output, r.pt)
        mesh = mesh_of(c.output)
        k, d = mesh.index(rank, r.pt), mesh.extent(r.pt)
        n = x.shape[dim] // d if split else 1
        return x.narrow(dim, k * n, n).contiguous()
    if r.kind in ("Broadcast", "SendRecv"):
        return _broadcast(c, x, comm)
    mesh = mesh_of(c.output)
    # Every rank makes the groups of every team, in the same order (torch.distributed).
    groups = {tuple(t): comm.group(t) for t in mesh.teams(r.pt)}
    if not mesh.has(rank):
        return None
    team = c.team(rank)
    group = groups[tuple(team)]
    nccl = comm.backend() == "nccl"
    if r.kind == "Allgather":
        dim, split = _dim_of(c.input, r.pt)
        x = x.contiguous()
        if nccl and dim == 0 and team == sorted(team):
            out = x.new_empty([x.shape[0] * len(team), *x.shape[1:]])
            dist.all_gather_into_tensor(out, x, group=group)
            return out
        parts = [torch.empty_like(x) for _ in team]
        dist.all_gather(parts, x, group=group)
        return torch.cat(_ordered(parts, team), dim=dim)
    if r.kind == "Allreduce":
        y = x if in_place and x.is_contiguous() else x.contiguous().clone()
        dist.all_reduce(y, op=REDUCE_OPS[r.reduce_op], group=group)
        return y
    if r.kind == "ReduceScatter":
        dim, split = _dim_of(c.output, r.pt)
        k, d = team.index(rank), len(team)
        if not split and x.shape[dim] != d:
            raise ExecutionError(f"Communication {c.number}: {c.input.short_name} axis {dim} has "
                                 f"{x.shape[dim]} elements, not {d}")
        n = x.shape[dim] // d
        if nccl and team == sorted(team):
            src = x.movedim(dim, 0).contiguous()
            out = src.new_empty([n, *src.shape[1:]])
            dist.reduce_scatter_tensor(out, src, op=REDUCE_OPS[r.reduce_op], group=group)
            return out.movedim(0, dim).contiguous()
        y = x.contiguous().clone()
        dist.all_reduce(y, op=REDUCE_OPS[r.reduce_op], group=group)
        return y.narrow(dim, k * n, n).contiguous()
    raise ExecutionError(f"Communication {c.number}: no runtime for {r.kind}")


def _broadcast(c: Communication, x: torch.Tensor | None, comm: Communicator) -> torch.Tensor | None:
    r = c.resharding
    rank = comm.rank()
    team = c.team(rank)
    group = comm.group(team)
    if rank not in team:
        return None
    meta = [None if rank != r.root else (list(x.shape), x.dtype)]
    dist.broadcast_object_list(meta, src=r.root, group=group)
    shape, dtype = meta[0]
    buf = x.contiguous() if rank == r.root else torch.empty(shape, dtype=dtype, device=comm.device())
    dist.broadcast(buf, src=r.root, group=group)
    return buf if mesh_of(c.output).has(rank) else None


def _laid_out(v: Any, x: Any) -> Any:
    """`x` laid out as the region's input `v` is declared (its kernels index it so): an
    expanded broadcast that a communication or another region wrote out whole (every
    element along it is the same) made a stride-0 view again; other layouts made dense in
    order (a permute's output passed on)."""
    if not isinstance(v, TensorView) or not isinstance(x, torch.Tensor) or x.dim() != v.ndim:
        return x
    dims = [i for i in v.domain.logical if not i.is_reduction]
    expanded = [k for k, i in enumerate(dims) if i.has_expanded_extent]
    if all(x.stride(k) == 0 for k in expanded):
        try:
            check_input_layout(v, x)
            return x
        except ExecutionError:
            pass
    base = x
    for k in expanded:
        base = base.narrow(k, 0, 1)
    return base.contiguous().expand(x.shape)


def run_region(region: Region, args: list[Any], backend: str) -> list[Any]:
    if backend == "reference":
        dev = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        return evaluate(region.fusion, args, device=dev)
    args = [_laid_out(v, x) for v, x in zip(region.fusion.inputs, args)]
    key = (backend, _signature(args))
    cf = region.compiled.get(key)
    if cf is None:
        cf = region.compiled[key] = compile_fusion(region.fusion, args)
    return cf.run(args, backend=backend)


def check_shards(program: MultiDeviceProgram, inputs: Sequence[Any], rank: int) -> None:
    """ExecutionError naming the input and axis when a tensor is not this rank's shard of a
    fixed-size axis (the commonest mistake: the whole tensor passed where a shard is due)."""
    for v, x in zip(program.inputs, inputs):
        mesh = mesh_of(v) if isinstance(v, TensorView) else None
        if mesh is None or not isinstance(x, torch.Tensor) or not mesh.has(rank):
            continue
        dims = [i for i in v.domain.logical if not i.is_reduction]
        if x.dim() != len(dims):
            raise ExecutionError(f"{v.short_name} has {len(dims)} dimensions, its input {x.dim()}")
        for dim, s in sharded_dims(v):
            i = dims[dim]
            e, d = full_extent(i), mesh.extent(s.pt)
            want = (int(e.value) // d if s.split else 1) if e.is_const else None
            if want is not None and x.shape[dim] != want:
                raise ExecutionError(
                    f"{v.short_name}: axis {dim} of its input has {x.shape[dim]} elements on rank {rank}; "
                    f"sharded on {s.pt.name} over {d} devices it holds {want} of {int(e.value)} "
                    "(pass this rank's shard: engine.multidevice.shard_tensor)")


def whole_sizes(program: MultiDeviceProgram, inputs: Sequence[Any]) -> dict[Scalar, int]:
    """The fusion's symbolic extents at their whole (unsharded) sizes, from this device's
    input shards."""
    env: dict[Scalar, int] = {}
    for v, x in zip(program.inputs, inputs):
        if not isinstance(v, TensorView) or not isinstance(x, torch.Tensor) or x.numel() == 0:
            continue
        dims = [i for i in v.domain.logical if not i.is_reduction]
        sizes = list(x.shape)
        mesh = mesh_of(v)
        for dim, s in sharded_dims(v):
            d = mesh.extent(s.pt)
            sizes[dim] = sizes[dim] * d if s.split else d
        for i, n in zip(dims, sizes):
            if i.extent.is_symbol:
                env.setdefault(i.extent, n)
    return env


def region_scalars(region: Region, program: MultiDeviceProgram, inputs: Sequence[Any]) -> list[int]:
    if not region.symbols:
        return []
    env = whole_sizes(program, inputs)
    out = []
    for sym, parts in region.symbols:
        try:
            out.append(int(sym.evaluate(env)) // parts)
        except KeyError as e:
            raise ExecutionError(f"region {region.index}: {sym.inline()} is not bound by the fusion's inputs") from e
    return out


def _pipelined(program: MultiDeviceProgram, k: int, env: dict[int, Any], backend: str, comm: Communicator,
               clock: Clock) -> None:
    p = program.pipeline_at(k)
    assert p is not None
    rank, steps = comm.rank(), program.steps
    mesh = mesh_of(p.gather.output)
    groups = {tuple(t): comm.group(t) for t in mesh.teams(p.gather.resharding.pt)}
    team = p.gather.team(rank)
    gathered = p.gather.output
    later = any(reads(s, gathered) for s in steps[k + 2:]) or any(gathered is v for v in program.outputs)
    x = env[id(p.gather.input)]
    side = comm.side_stream(x.device) if comm.backend() == "nccl" and x.is_cuda else None
    run = run_ring if p.ring else run_pipeline
    run(p, env, backend, run_region, groups[tuple(team)], team, rank, later, side, clock)


def run_program(program: MultiDeviceProgram, inputs: Sequence[Any], backend: str = "reference",
                timeline: list[StepTime] | None = None) -> list[Any]:
    """This rank's outputs of `program` for this rank's `inputs` (local shards)."""
    comm = Communicator.instance()
    rank = comm.rank()
    if len(inputs) != len(program.inputs):
        raise ExecutionError(f"the fusion takes {len(program.inputs)} inputs, got {len(inputs)}")
    check_shards(program, inputs, rank)
    env: dict[int, Any] = {id(v): x for v, x in zip(program.inputs, inputs)}
    clock = Clock(timeline, backend == "cuda" and torch.cuda.is_available())
    steps = program.steps
    in_place = program.__dict__.get("_in_place")
    if in_place is None:
        in_place = program.__dict__["_in_place"] = {c.number for c in program.communications if program.only_reader(c)}
    skip = 0
    for k, step in enumerate(steps):
        if k < skip:
            continue
        p = program.pipeline_at(k)
        if p is not None and mesh_of(p.gather.output).has(rank):
            _pipelined(program, k, env, backend, comm, clock)
            skip = k + p.length
            continue
        start = clock.mark()
        if isinstance(step, Region):
            if step.mesh is not None and not step.mesh.has(rank):
                continue
            args = [env[id(v)] for v in step.inputs]
            if any(a is None for a in args):
                raise ExecutionError(f"region {step.index}: an input is not on device {rank}")
            args += region_scalars(step, program, inputs)
            outs = run_region(step, args, backend)
            env.update({id(v): o for v, o in zip(step.outputs, outs)})
            name, kind = f"region {step.index}", "compute"
        else:
            out = run_communication(step, env.get(id(step.input)), comm, in_place=step.number in in_place)
            if out is not None and backend == "cuda" and not out.is_cuda:
                out = out.cuda()  # received through the host (gloo)
            env[id(step.output)] = out
            name, kind = f"Communication {step.number}", step.kind
        clock.add(name, kind, start, clock.mark())
    clock.finish()
    outs = []
    for v in program.outputs:
        x = env.get(id(v))
        if x is None:
            like = next((a for a in inputs if isinstance(a, torch.Tensor)), None)
            dev = like.device if like is not None else "cpu"
            x = torch.empty(0, dtype=to_torch(v.dtype), device=dev)
        outs.append(x)
    return outs

