"""The combined inner-outer persistent schedule (layer-norm backward, seed 001), and the
allocation domain of its shared-memory input caches (`smem_allocation_from_loop`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import is_fastest_dim_reduction, reduction_tvs
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import MemoryType, TensorView
from engine.ir.verify import verify
from engine.schedule import tools
from engine.schedule.persistent_schedule import live_buffers, prepare
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.reduction_phases import separate_reduction_phases
from engine.schedule.reduction_schedule import canonicalize, rfactor_serial, vectorize_io
from engine.schedule.tools import note_transform

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


def smem_allocation_from_loop(tv: TensorView) -> list[IterDomain]:
    """Seed 001's rule for a shared-memory cache's allocation domain.

    For each allocation IterDomain in order (the logical ids in the layout the cache
    was given from its input), the loop IterDomains derived from it that are not left
    of the compute-at position; a loop id derived from several (a merge) is listed
    once, at its first. What is left of ca_pos is shared with the consumers and not
    allocated; a stale copy of the input's ids could not be allocated at all once the
    loop split them.
    """
    dom = tv.domain
    logical = dom.logical
    alloc_logical: list[IterDomain] = []
    for a in dom.maybe_allocation:
        for lg in _logical_sources(a, logical):
            if lg not in alloc_logical:
                alloc_logical.append(lg)
    alloc_logical += [i for i in logical if i not in alloc_logical]
    kept = dom.loop[tv.compute_at_pos:]
    out: list[IterDomain] = []
    for a in alloc_logical:
        for i in kept:
            if a in _logical_sources(i, logical) and i not in out:
                out.append(i)
    return out


def _logical_sources(i: IterDomain, logical: list[IterDomain]) -> list[IterDomain]:
    """The logical ids `i` derives from, in logical order."""
    found: set[IterDomain] = set()
    stack = [i]
    while stack:
        x = stack.pop()
        if x in logical:
            found.add(x)
            continue
        if x.definition is not None:
            stack.extend(x.definition.inputs)
    return [lg for lg in logical if lg in found]


def schedule_inner_outer(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    """Combined inner and outer reductions (layer-norm backward, seed 001).

    The iteration dimension of the inner reduction is split into rows per step
    (TIDy), a persistent grid (BIDy, one block per SM) and circular-buffer stages;
    every tensor gets these splits. Then the inner dimension is split by the vector,
    the persistent batches and TIDx on every tensor but the shared-memory caches,
    which a block-wide bulk copy fills a whole row at a time. Each outer reduction is
    rfactored into per-block partial results, then reduced across TIDy and BIDy.
    """
    prepare(fusion, p, trace)
    caches = tools.cache_inputs(fusion, trace=trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    buffers = live_buffers(fusion)
    smem_names = set(p.smem_persistent_buffers)
    smem = [c for c in caches
            if c in buffers and any(i.short_name in smem_names
                                    for i in c.definition.inputs if isinstance(i, TensorView))]
    for c in smem:
        c.set_memory_type(MemoryType.Shared)
        note_transform(trace, c.short_name, "persistent input cache in shared memory, filled a whole row at a time "
                   "by the block's threads")
    reds = reduction_tvs(fusion)
    # Which reductions are inner ones is read before rfactor_serial: a vectorized inner
    # reduction leaves its innermost (vector) axis to the per-thread partial, and the
    # cross-thread reduction that remains no longer reads as one.
    inner = [r for r in reds if is_fastest_dim_reduction(r)]
    ref = inner[0]
    canonicalize(ref, True)
    # Phase 1: iteration splits, on every tensor.
    ref.split(0, p.rows_per_step)
    ref.split(0, p.lparams.gdimy)
    stages = max(1, p.circular_buffer_stages)
    ref.split(0, stages)
    # [I/rows/grid/stages, stages, grid, rows, R] -> [grid, n, stages, rows, R]
    ref.reorder([2, 0, 1, 3, 4])
    tools.propagate_max_info(ref)
    # The bulk-loaded caches keep these iteration splits only: their copy fills
    # whole rows. Phase 2 propagates through them (they are the only path that
    # carries both axes of T0 to T4 in seed 001), so they are put back after it.
    kept = {c: (list(c.domain.loop), c.domain.allocation and list(c.domain.allocation),
                list(c.domain.contiguity)) for c in smem}
    # Phase 2: the inner dimension, on every tensor but the bulk-loaded caches.
    r = 4
    v = p.unroll_factor_inner_reduction
    if v > 1:
        ref.split(r, v)
    ref.split(r, p.batches_per_block_inner_reduction, inner_split=False)
    ref.parallelize(0, ParallelType.grid_y)
    ref.parallelize(3, ParallelType.block_y)
    ref.parallelize(r + 1, ParallelType.block_x)
    rest = [t for t in fusion.tensors() if t not in smem and t not in fusion.inputs]
    tools.propagate_max_info(ref, [t for t in fusion.tensors() if t not in fusion.inputs])  # type: ignore[misc]
    for c, (loop, alloc, contig) in kept.items():
        c.domain.loop, c.domain.allocation, c.domain.contiguity = loop, alloc, contig
        verify(c)
    note_transform(trace, ref.short_name, "reference scheduled (inner-outer)")
    tools.parallelize_all_like(ref, selected=rest)  # type: ignore[arg-type]
    for c in smem:
        _schedule_bulk_cache(c)
    for red in reds:
        rf = rfactor_serial(red, trace)
        if rf is not None:
            note_transform(trace, red.short_name, f"rfactor: partial reduction in {rf.short_name}")
    outs = [o for o in fusion.outputs if isinstance(o, TensorView) and o not in fusion.inputs]
    vectorize_io(fusion, [*[c for c in caches if c not in smem], *outs], v)
    keep = [b for b in buffers if b not in smem]
    others = [t for t in fusion.tensors() if t not in keep and t not in smem]
    tools.inline_most(fusion, others)  # type: ignore[arg-type]
    for b in keep:
        b.inline_at(min(4, b.nloop), best_effort=True)
    separate_reduction_phases(fusion, inner, 4, trace)
    for c in smem:
        # Stages and rows right of position 2 are what the circular buffer holds.
        c.inline_at(2, best_effort=True)
        alloc = smem_allocation_from_loop(c)
        c.set_allocation_domain(alloc, True)
        if stages > 1:
            c.circular_buffer(stages)
        note_transform(trace, c.short_name, "allocation domain rebuilt from the loop domain right of ca_pos: "
                   + "(" + ", ".join(str(i) for i in alloc) + ")")


def _schedule_bulk_cache(c: TensorView) -> None:
    """[grid, n, stages, rows, <inner ids>] with broadcasts before the row being
    copied, blockIdx.y on the grid axis and the copied row as one bulk axis."""
    loop = c.domain.loop
    head, tail = loop[:4], loop[4:]
    tail = [i for i in tail if i.is_broadcast] + [i for i in tail if not i.is_broadcast]
    c.reorder([loop.index(i) for i in head + tail])
    c.parallelize(0, ParallelType.grid_y)
    last = c.domain.loop[-1]
    if not last.is_broadcast:
        c.parallelize(-1, ParallelType.bulk)
