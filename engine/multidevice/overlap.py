"""Collective-based overlap of an Allgather with the region that consumes it (nvFuser's
stream-parallel decomposition of an allgather feeding a matmul), and of that region with a
ReduceScatter of its output: the plan (which steps, how many chunks); running it is
engine.multidevice.pipeline.

The user asks for it with a stream split of the gathered tensor's sharded axis:

    x.outer_split(0, d); x.axis(0).parallelize(ParallelType.mesh_x)
    x.outer_split(1, s); x.axis(1).parallelize(ParallelType.stream)

Each device's part is then gathered in `s` chunks and the region runs once per chunk on the
rows gathered for it, so that the gather of chunk j+1 overlaps the compute of chunk j. The
region must be row-wise along the gathered axis (every op maps it to its output without
reducing it, and no other input has it), so that a chunk's rows give the same rows of its
outputs; otherwise the Allgather runs whole. When the next step reduce-scatters one of the
region's outputs along those rows (sequence parallelism's second half), and nothing else
reads that output, it is chunked too: chunk j's partial sums are reduce-scattered while
chunk j+1 computes, each device receiving its own rows of chunk j in place.

That is the collective-based decomposition. The ring-based one (nvFuser's spelling: the
gathered tensor itself split by the devices on a stream axis,

    ag = fd.ops.set(x); ag.outer_split(0, d); ag.axis(0).parallelize(ParallelType.stream)

one stream iteration per device's block) passes the blocks around a ring of point-to-point
transfers instead: each device computes its own block first, with no communication, while
the next block arrives from its neighbour (engine.multidevice.ring). A reduce-scatter after
it runs whole, as NCCL's collective: sent point to point as each block's partial sums were
computed, the last block's (which nothing overlaps) moved at well under the collective's
speed on 2 H200s (1.5 ms against 0.6 for 128 MB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.ir.exprs import LoadStoreOp
from engine.ir.iterdomain import IterDomain, ParallelType, Split
from engine.ir.tensorview import TensorView
from engine.multidevice.axis_map import device_map
from engine.multidevice.sharding import mesh_of, sharded_dims

if TYPE_CHECKING:
    from engine.multidevice.program import Communication, Region


def stream_axis(tv: TensorView) -> IterDomain | None:
    """The stream-parallel loop axis of `tv`, if any."""
    return next((i for i in tv.domain.loop if i.parallel_type == ParallelType.stream), None)


def stream_chunks(tv: TensorView) -> int:
    """The factor of a stream-parallel outer split in `tv`'s loop domain (1 when none)."""
    for i in tv.domain.loop:
        t = i.definition
        if i.parallel_type == ParallelType.stream and isinstance(t, Split) and t.outer is i and not t.inner_split:
            v = t.factor.value if t.factor.is_const else None
            return int(v) if v is not None else 1
    return 1


def row_wise(region: Region, gathered: TensorView) -> bool:
    """Whether every output of `region` has the gathered tensor's first axis as its first
    axis, and nothing reduces it or brings it in from another input."""
    tracked: set[IterDomain] = {_first(gathered)}
    for e in region.exprs:
        ins = [v for v in e.inputs if isinstance(v, TensorView)]
        for o in [v for v in e.outputs if isinstance(v, TensorView)]:
            maps = [(p, device_map(p, o)) for p in ins]
            for _, m in maps:
                for pi, oi in m.items():
                    if pi in tracked:
                        if oi.is_reduction:
                            return False
                        tracked.add(oi)
            for _, m in maps:
                if any(oi in tracked and pi not in tracked for pi, oi in m.items()):
                    return False
    return all(_first(o) in tracked for o in region.outputs if isinstance(o, TensorView))


def _first(tv: TensorView) -> IterDomain | None:
    dims = [i for i in tv.domain.logical if not i.is_reduction]
    return dims[0] if dims else None


def overlappable(gather: Communication, region: Region) -> int:
    """The number of chunks to overlap `gather` with `region` in (0: run them apart)."""
    if gather.kind != "Allgather" or gather.output not in region.inputs or region.symbols:
        return 0
    s = stream_chunks(gather.input)
    if s <= 1:
        return 0
    if _row_dim(gather.input, gather) != 0 or not _teams_in_order(gather) or not row_wise(region, gather.output):
        return 0
    return s


def _row_dim(tv: TensorView, c: Communication) -> int | None:
    dims = [dim for dim, sh in sharded_dims(tv) if sh.pt == c.resharding.pt and sh.split]
    return dims[0] if len(dims) == 1 else None


def _teams_in_order(c: Communication) -> bool:
    """Every team lists its devices in ascending order: a chunk's rows then come in the
    order the collective's group ranks fill them."""
    mesh = mesh_of(c.output)
    return mesh is not None and all(t == sorted(t) for t in mesh.teams(c.resharding.pt))


def ring_blocks(gather: Communication, region: Region) -> int:
    """The team size when the gathered rows carry a stream split by it (on the gathered
    tensor or on the region's copy of it): a ring-based pipeline; 0 otherwise."""
    mesh = mesh_of(gather.output)
    if mesh is None or gather.kind != "Allgather" or region.symbols:
        return 0
    d = mesh.extent(gather.resharding.pt)
    copies = [v for v in _gathered_views(gather, region)
              if v is gather.output or isinstance(v.definition, LoadStoreOp)]
    if d < 2 or not any(_rows_split(v) == d for v in copies):
        return 0
    if _row_dim(gather.input, gather) != 0 or not _teams_in_order(gather) or not row_wise(region, gather.output):
        return 0
    return d


def _rows_split(tv: TensorView) -> int:
    """The factor of a stream-parallel outer split of `tv`'s first logical axis (0: none)."""
    first = _first(tv)
    for i in tv.domain.loop:
        t = i.definition
        if i.parallel_type == ParallelType.stream and isinstance(t, Split) and t.outer is i \
                and not t.inner_split and t.in_id is first and t.factor.is_const:
            return int(t.factor.value)
    return 0


@dataclass(frozen=True)
class Pipeline:
    """An Allgather, the region that reads it and, optionally (collective chunks only), the
    ReduceScatter of one of the region's outputs, run in `chunks` stream chunks (steps k,
    k+1 and k+2); `ring`: one chunk per device's block, passed around the team point to
    point."""

    gather: Communication
    region: Region
    scatter: Communication | None
    chunks: int
    ring: bool = False
    axis: IterDomain | None = None  # the stream axis the host IR's loop runs over

    @property
    def length(self) -> int:
        return 2 if self.scatter is None else 3



def reads(step: Any, v: TensorView) -> bool:
    """Whether a program step (a region or a communication) reads `v`."""
    return any(v is x for x in step.inputs) if hasattr(step, "exprs") else step.input is v


def _gathered_views(gather: Communication, region: Region) -> list[TensorView]:
    """The gathered tensor and the region's direct results of it (nvFuser's ring spelling
    puts the stream split on a `set` copy of it)."""
    return [gather.output] + [o for e in region.exprs if any(v is gather.output for v in e.inputs)
                              for o in e.outputs if isinstance(o, TensorView)]


def plan_pipeline(steps: list[Any], k: int, outputs: list[Any]) -> Pipeline | None:
    """The pipeline starting at step `k` of a program's `steps` (its fusion's `outputs`
    given), or None when step k is no Allgather that can overlap its reader."""
    gather = steps[k]
    region = steps[k + 1] if k + 1 < len(steps) else None
    if not hasattr(gather, "resharding") or region is None or not hasattr(region, "exprs"):
        return None
    ring = ring_blocks(gather, region)
    chunks = ring or overlappable(gather, region)
    if not chunks:
        return None
    # A ring's partial sums are reduce-scattered whole after it (NCCL's collective moves them
    # faster than the point-to-point sends that would overlap them); collective chunks
    # reduce-scatter each chunk's as the next computes.
    nxt = steps[k + 2] if k + 2 < len(steps) and not ring else None
    scatter = nxt if nxt is not None and _chunked_scatter(gather, region, nxt, steps, outputs) else None
    views = [gather.input, *_gathered_views(gather, region)]
    axis = next((a for a in map(stream_axis, views) if a is not None), None)
    return Pipeline(gather, region, scatter, chunks, ring=bool(ring), axis=axis)


def _chunked_scatter(gather: Communication, region: Region, c: Any, steps: list[Any], outputs: list[Any]) -> bool:
    if not hasattr(c, "resharding") or c.kind != "ReduceScatter" or c.resharding.pt != gather.resharding.pt:
        return False
    v = c.input
    if not any(v is o for o in region.outputs) or any(v is o for o in outputs):
        return False
    if sum(1 for s in steps if reads(s, v)) != 1:
        return False
    return mesh_of(c.output) == mesh_of(gather.output) and _row_dim(c.output, c) == 0
