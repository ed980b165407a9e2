"""Persistent (normalization) schedulers: inner, outer and combined inner-outer.

A normalization reads a row, reduces it, and uses the row again with the result
(softmax, layer and RMS norm, layer-norm backward). The row is a persistent buffer:
these schedulers keep it on chip across the reduction, in registers or, when it is
too large for them (or on sm_90 and later, the inner-outer case, whose inputs are staged
in circular-buffered shared memory), in shared memory, and refuse when it fits neither. A buffer that can be recomputed
from inputs through pointwise ops is projected when that is smaller (a bf16 input
instead of its float cast): its uses after the reduction recompute it from the
inputs, and the cached inputs become the buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from engine.analysis.logical_map import consumers_of, logical_map, pairwise_logical_map, producers_of
from engine.analysis.persistent import (
    PersistentBufferInfo,
    downstream_tvs,
    is_fastest_dim_reduction,
    is_reduction_tv,
    persistent_buffer_size,
    persistent_buffers,
    reduction_properties,
    reduction_tvs,
    reduction_type,
    sibling_tvs,
    upstream_tvs,
)
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import MemoryType, TensorDomain, TensorView
from engine.ir.verify import verify
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.persistent_fit import (
    Schedule,
    column_elements,
    inner_outer_shapes,
    inner_shapes,
    outer_shapes,
    row_elements,
    storage_families,
)
from engine.schedule.reduction_checks import (
    common_reject,
    gather_before_reduction,
    reduces_expansion,
    uncovered_reason,
    unmapped_reductions,
)
from engine.schedule.reduction_heuristics import record, vectorize_factor
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.reduction_schedule import (
    canonicalize,
    inline,
    rfactor_serial,
    schedule_reduction_fusion,
    schedule_reference,
    vectorize_io,
)
from engine.schedule.registry import register
from engine.schedule.tools import ceil_div, next_pow2, note_transform

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.runtime.device import DeviceProperties
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace

_EXPECTED = {
    SchedulerType.inner_persistent: "inner",
    SchedulerType.outer_persistent: "outer",
    SchedulerType.inner_outer_persistent: "inner_outer",
}

# Rows of the iteration domain each block handles per step, and circular-buffer stages, of the
# inner-outer schedule whose inputs are staged in shared memory (seed 001's T7: iS116{2} rows,
# iS120{2} stages).
_ROWS_PER_STEP = 2
_STAGES = 2


# ---- budgets ----------------------------------------------------------------------------------------

def register_budget(dev: DeviceProperties) -> int:
    """Bytes of registers a block may use for persistent buffers: three quarters of
    the SM's register file, the rest for addresses, loop indices and temporaries
    (nvFuser keeps a similar reserve in scheduler_utils::register_file_size)."""
    return dev.registers_per_sm * 4 * 3 // 4


def smem_budget(dev: DeviceProperties, dtype_bytes: int = 4) -> int:
    """Shared memory a block may use for persistent buffers: the opt-in maximum less the
    block reduction's workspace (one value per thread), as nvFuser's
    getAvailableSmemSize."""
    return dev.shared_memory_per_block - dev.max_threads_per_block * dtype_bytes


def stages_inputs(dev: DeviceProperties) -> bool:
    """Whether the inner-outer schedule stages its row inputs in circular-buffered shared
    memory: on sm_90 and later, as nvFuser does there (with TMA loads). This engine does not
    generate TMA: the circular-buffer pass loads the stages with cp.async
    (engine/lower/circular_buffer.py)."""
    return dev.compute_capability >= (9, 0)


def _buffer_bytes(fusion: Fusion, info: SchedulerRuntimeInfo) -> tuple[int, bool, PersistentBufferInfo]:
    """Bytes per reduction row of the persistent buffers, and whether projecting them
    to the inputs is what gives that size."""
    reds = reduction_tvs(fusion)
    ref = next((r for r in reds if is_fastest_dim_reduction(r)), reds[0])
    props = reduction_properties(ref, info)
    pb = persistent_buffers(fusion)
    sz = persistent_buffer_size(fusion, info, pb, props.total_iteration_numel)
    project = sz.can_project and sz.projected_persistent_buffer_size < sz.persistent_buffer_size
    size = sz.projected_persistent_buffer_size if project else sz.persistent_buffer_size
    return size, project, pb


# ---- projection ----------------------------------------------------------------------------------------

def _copy_tv(tv: TensorView) -> TensorView:
    ids = [IterDomain(tv.fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
           for i in tv.domain.logical if not i.is_reduction]
    return TensorView(tv.fusion, TensorDomain(ids), tv.dtype, MemoryType.Local)


def _clone_expr(expr: ex.Expr, inputs: list, outputs: list) -> ex.Expr:
    """The same op (class and attributes) between new values."""
    e = object.__new__(type(expr))
    e.fusion = expr.fusion
    e.inputs = list(inputs)
    e.outputs = list(outputs)
    e.attributes = dict(expr.attributes)
    e.name = expr.fusion.register_expr(e)
    return e


def _recompute(fusion: Fusion, t: TensorView, memo: dict[TensorView, TensorView]) -> TensorView:
    """A copy of `t` computed again from the fusion inputs by the same pointwise ops."""
    if t in fusion.inputs:
        return t
    if t in memo:
        return memo[t]
    e = t.definition
    assert e is not None
    ins = [_recompute(fusion, v, memo) if isinstance(v, TensorView) else v for v in e.inputs]
    out = _copy_tv(t)
    _clone_expr(e, ins, [out])
    memo[t] = out
    return out


def project_to_inputs(fusion: Fusion, pb: PersistentBufferInfo, trace: Trace | None) -> list[TensorView]:
    """Make the uses of each projectable buffer after its reduction read a copy
    recomputed from the inputs, so that only the inputs stay persistent (nvFuser's
    projectPersistentBuffers). Returns the recomputed copies."""
    made: list[TensorView] = []
    for buf, _ins in pb.projectable.items():
        after: set[TensorView] = set()
        for red, live in pb.live_across.items():
            if buf in live:
                for s in sibling_tvs(red):
                    after |= downstream_tvs(s)
        uses = [e for e in fusion.uses_of(buf)
                if any(isinstance(o, TensorView) and o in after for o in e.outputs)]
        if not uses:
            continue
        copy = _recompute(fusion, buf, {})
        for e in uses:
            fusion.replace_input_of(e, buf, copy)
        made.append(copy)
        if trace is not None:
            trace.event("transform", buf.short_name,
                        f"projected to inputs: uses after the reduction read {copy.short_name}, "
                        "recomputed from " + ", ".join(t.short_name for t in _ins))
    return made


# ---- checks ------------------------------------------------------------------------------------------------

def persistent_compile_reject(fusion: Fusion, kind: SchedulerType) -> str | None:
    """nvFuser's compile-time checks of the persistent schedulers, in its order."""
    why = common_reject(fusion, kind)
    if why is not None:
        return why
    reds = reduction_tvs(fusion)
    if reduction_type(reds) != _EXPECTED[kind]:
        return "ReductionType and heuristic doesn't match."
    if kind != SchedulerType.inner_outer_persistent:
        pair = unmapped_reductions(reds)
        if pair is not None:
            return f"unmapped reduction {pair[0]} and {pair[1]}"
    else:
        why = inner_outer_shape_reason(reds) or outer_result_reused(fusion, reds)
        if why is not None:
            return why
    if any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
        return "View may interfere with normalization scheduling."
    expanding = next((r for r in reds if reduces_expansion(r)), None)
    if expanding is not None:
        # This engine's limit: a persistent buffer holds that axis as a real one, which the
        # reduction's loop cannot index for it (each thread would read others' elements).
        return f"{expanding.short_name} reduces an expanded broadcast axis"
    if not persistent_buffers(fusion).persistent_buffers:
        return "no persistent buffer identified"
    if gather_before_reduction(fusion, reds):
        return "has unsupported gather-like ops before normalization"
    return uncovered_reason(fusion, [_reference(reds, kind)])


def _reference(reds: list[TensorView], kind: SchedulerType) -> TensorView:
    """The reduction the schedule splits and propagates from."""
    if kind == SchedulerType.inner_outer_persistent:
        return next(r for r in reds if is_fastest_dim_reduction(r))
    return reds[0]


def inner_outer_shape_reason(reds: list[TensorView]) -> str | None:
    """nvFuser's checkIfReductionsAreInnerOuter: the combined schedule reads an inner
    reduction as [I, .., I, R, .., R] and an outer one as [R, .., R, I, .., I] (at least one
    of each kind, nothing else in between, a broadcast axis included): a reduction of a
    middle axis, or of an outer and the inner axis at once, is neither. Then, as its
    reduction root size and isReductionIterationAxisMatched checks: every reduction has as
    many axes, the inner ones reduce the same axes and the outer ones reduce exactly the
    inner ones' iteration axes (the rows the blocks share). An outer sum over part of the
    rows of an inner reduction's result (InstanceNorm's weight grads: sum over N of an
    [N, C] result of sums over H, W) is no such reduction: the combined kernel would need
    the rows of other blocks. Unlike nvFuser, an axis of extent 1 is left out (it iterates
    once whatever its kind): the RMSNorm backward of a [1, S, H] input, reducing its unit
    axis with the others, keeps its one combined kernel instead of five."""
    patterns: list[tuple[bool, list[str]]] = []
    for red in reds:
        kinds = ["R" if i.is_reduction else "I" if i.is_iteration else "-"
                 for i in red.domain.loop if not (i.extent.is_const and i.extent.value == 1)]
        inner = is_fastest_dim_reduction(red)
        first, second = ("I", "R") if inner else ("R", "I")
        k = 0
        while k < len(kinds) and kinds[k] == first:
            k += 1
        if k == 0 or k == len(kinds) or any(x != second for x in kinds[k:]):
            return ("to use combined reduction, inner reduction tensor should be [I,I,...,R,R] "
                    "and outer reduction tensor should be [R,R,...,I,I]")
        patterns.append((inner, kinds))
    ref = next((kinds for inner, kinds in patterns if inner), None)
    if ref is None:
        return None
    flipped = ["I" if x == "R" else "R" for x in ref]
    for inner, kinds in patterns:
        if len(kinds) != len(ref):
            return (f"inconsistent reduction root size: {len(kinds)} axes where the first inner "
                    f"reduction has {len(ref)}")
        if kinds != (ref if inner else flipped):
            return ("to use combined reduction, every iteration axis in inner reduction tv should "
                    "match to a reduction domain in outer reduction tv")
    return None


def outer_result_reused(fusion: Fusion, reds: list[TensorView]) -> str | None:
    """Why the combined inner-outer schedule cannot compute this fusion: an outer
    reduction's result is used again over the rows it reduced, or reduced again.

    That schedule ends each outer reduction with a grid reduction over the persistent
    blocks (gridReduce), after every block's loop over its rows: only the last block
    to arrive has the result, and no row is left to combine it with. A normalization
    over the outer axis (x - mean over dim 0, a two-pass variance over dim 0) needs it
    in every block, i.e. a grid-wide all-reduce and a second pass over the rows, which
    that schedule does not have. Whatever is computed from an outer result may only
    run over the result's own axes (and broadcasts of them that stay broadcast), to
    outputs: a tensor downstream of it with a concrete axis that does not come from the
    result's axes iterates over rows, and one defined by a reduction reduces it again.
    """
    order = {t: k for k, t in enumerate(fusion.tensors())}
    for red in reds:
        if is_fastest_dim_reduction(red):
            continue
        e = red.definition
        sibs = [o for o in e.outputs if isinstance(o, TensorView)] if e is not None else [red]
        own = {i for s in sibs for i in s.domain.logical if not i.is_reduction}
        down: set[TensorView] = set()
        for s in sibs:
            down |= downstream_tvs(s)
        down -= set(sibs)
        for t in sorted(down, key=lambda t: order.get(t, len(order))):
            if is_reduction_tv(t):
                return (f"outer reduction {red.short_name} is reduced again by {t.short_name}: the "
                        "combined kernel has an outer result only after its grid reduction")
            for p in producers_of(t):
                if p in down or p in sibs:
                    own |= {c for q, c in logical_map(p, t).items() if q in own}
            rows = [i for i in t.domain.logical
                    if not i.is_reduction and not i.is_broadcast and i not in own]
            if rows:
                return (f"outer reduction {red.short_name}'s result is used over the rows it reduced "
                        f"({t.short_name} axis {rows[0]}): the combined kernel's grid reduction gives "
                        "it to the last block only (a grid all-reduce is not supported)")
    return None


def _fits(size: int, dev: DeviceProperties) -> str | None:
    if size > max(register_budget(dev), smem_budget(dev)):
        return "not enough registers or shared memory for persistence"
    return None


# ---- heuristics ------------------------------------------------------------------------------------------------

def _storage(size_per_block: int, dev: DeviceProperties) -> str:
    if size_per_block <= register_budget(dev):
        return "registers"
    if size_per_block <= smem_budget(dev):
        return "shared memory"
    return "none"


def _persistent_threads(after_v: int, per_thread: int, dev: DeviceProperties) -> int:
    """Threads along a row for about `per_thread` batches each: at least a warp, at most a block."""
    return min(max(next_pow2(ceil_div(after_v, per_thread)), min(dev.warp_size, next_pow2(after_v))),
               dev.max_threads_per_block)


def inner_persistent_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    dev = info.device
    reds = reduction_tvs(fusion)
    props = reduction_properties(reds[0], info)
    size, project, pb = _buffer_bytes(fusion, info)
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    after_v = ceil_div(red_n, v)
    # Aim at about four persistent batches per thread; at least a warp, at most a block.
    bdimx = _persistent_threads(after_v, 4, dev)
    if any(isinstance(e, ex.WelfordOp) for e in fusion.exprs()):
        # A Welford aims at two where the row divides evenly among the threads: then its
        # thread part is two passes over registers and its block combine pairs equal counts
        # without dividing (engine/lower/reductions.py), so more threads cost it little.
        # Where values are predicated off, the general combine is slower at that many
        # threads: the four stay.
        wide = _persistent_threads(after_v, 2, dev)
        if red_n % v == 0 and after_v % wide == 0:
            bdimx = wide
    batches = ceil_div(after_v, bdimx)
    bdimy = min(128 // bdimx, next_pow2(it_n)) if bdimx < 128 else 1
    where = _storage(size * bdimy, dev)
    while where == "none" and bdimy > 1:
        bdimy //= 2
        where = _storage(size * bdimy, dev)
    gdimx = ceil_div(it_n, bdimy)
    why = [f"persistent buffer {size} bytes per row"
           + (" (projected to inputs)" if project else ""), *why,
           f"TIDx {bdimx} x batches {batches} x vector {v} covers {red_n}; TIDy {bdimy} rows per block",
           f"buffer of {size * bdimy} bytes per block in {where} (registers up to "
           f"{register_budget(dev)}, shared memory up to {smem_budget(dev)})"]
    smem = tuple(t.short_name for t in _kept_buffers(pb, project)) if where == "shared memory" else ()
    p = ReductionParams(
        tag="Inner Persistent Heuristic", fastest_dim=True, persistent_kernel=True,
        project_persistent_buffers=project,
        cross_block_inner_reduction=True, unroll_factor_inner_reduction=v,
        vectorize_inner_reduction=v > 1, batches_per_block_inner_reduction=batches,
        multiple_reds_per_blk=bdimy > 1,
        block_dim_inner_reduction=ParallelType.block_x, grid_dim_iter_dom=ParallelType.grid_x,
        block_dim_iter_dom=ParallelType.block_y if bdimy > 1 else ParallelType.serial,
        smem_persistent_buffers=smem,
        lparams=LaunchParams(gdimx=gdimx, gdimy=1, bdimx=bdimx, bdimy=bdimy,
                             smem=size * bdimy if smem else 0),
    )
    return record(p, why, info, trace)


def outer_persistent_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    dev = info.device
    reds = reduction_tvs(fusion)
    props = reduction_properties(reds[0], info)
    size, project, pb = _buffer_bytes(fusion, info)  # bytes per iteration column
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    after_v = ceil_div(it_n, v)
    bdimx = min(next_pow2(after_v), 32)
    bdimy = min(next_pow2(ceil_div(red_n, 4)), max(1, dev.max_threads_per_block // bdimx))
    batches = ceil_div(red_n, bdimy)
    cols = bdimx * v
    where = _storage(size * cols, dev)
    gdimx = ceil_div(after_v, bdimx)
    why = [f"persistent buffer {size} bytes per column" + (" (projected)" if project else ""), *why,
           f"TIDx {bdimx} x vector {v} columns per block; TIDy {bdimy} x batches {batches} "
           f"covers the reduction {red_n}", f"{size * cols} bytes per block in {where}"]
    smem = tuple(t.short_name for t in _kept_buffers(pb, project)) if where == "shared memory" else ()
    p = ReductionParams(
        tag="Outer persistent kernel heuristic", fastest_dim=False, persistent_kernel=True,
        project_persistent_buffers=project,
        cross_block_inner_reduction=True, unroll_factor_iter_dom=v, vectorize_iter_dom=v > 1,
        batches_per_block_inner_reduction=batches,
        block_dim_inner_reduction=ParallelType.block_y, block_dim_iter_dom=ParallelType.block_x,
        grid_dim_iter_dom=ParallelType.grid_x, smem_persistent_buffers=smem,
        lparams=LaunchParams(gdimx=gdimx, gdimy=1, bdimx=bdimx, bdimy=bdimy,
                             smem=size * cols if smem else 0),
    )
    return record(p, why, info, trace)


def _kept_buffers(pb: PersistentBufferInfo, project: bool) -> list[TensorView]:
    out: list[TensorView] = []
    for b in pb.persistent_buffers:
        for t in (pb.projectable.get(b, [b]) if project else [b]):
            if t not in out:
                out.append(t)
    return out


def _inner_outer_sizes(fusion: Fusion, info: SchedulerRuntimeInfo) -> tuple[int, int, bool, list[TensorView]]:
    """(input buffers bytes per row, partial outer-reduction bytes per row, project, buffers)."""
    size, project, pb = _buffer_bytes(fusion, info)
    reds = reduction_tvs(fusion)
    ref = next(r for r in reds if is_fastest_dim_reduction(r))
    props = reduction_properties(ref, info)
    # Each block accumulates the outer reductions' partial results over its rows: one
    # float row (the inner dimension) per outer reduction.
    n_outer = sum(1 for r in reds if not is_fastest_dim_reduction(r))
    partial = n_outer * props.inner_most_dimension_numel * 4
    return size, partial, project, _kept_buffers(pb, project)


def _has_row_axis(fusion: Fusion, ref: TensorView, tv: TensorView) -> bool:
    """Whether `tv` has an axis that the logical maps of the fusion's ops pair with an
    iteration (row) axis of the inner reduction `ref` (broadcasts do not pair)."""
    rows = {i for i in ref.domain.logical if not i.is_reduction and not i.is_broadcast}
    pairs = []
    for e in fusion.exprs():
        for c in e.outputs:
            if not isinstance(c, TensorView):
                continue
            for p in {v for v in e.inputs if isinstance(v, TensorView)}:
                pairs += [(a, b) for a, b in pairwise_logical_map(p, c).items()
                          if not a.is_broadcast and not b.is_broadcast]
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            if (a in rows) != (b in rows):
                rows |= {a, b}
                changed = True
    return any(i in rows for i in tv.domain.logical)


def inner_outer_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    dev = info.device
    reds = reduction_tvs(fusion)
    ref = next(r for r in reds if is_fastest_dim_reduction(r))
    props = reduction_properties(ref, info)
    size, partial, project, kept = _inner_outer_sizes(fusion, info)
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    after_v = ceil_div(red_n, v)
    bdimx = min(max(next_pow2(ceil_div(after_v, 4)), min(dev.warp_size, next_pow2(after_v))),
                dev.max_threads_per_block // _ROWS_PER_STEP)
    batches = ceil_div(after_v, bdimx)
    rows = _ROWS_PER_STEP
    # One block per SM that loops over its rows (a persistent grid); the outer
    # reductions end with a grid reduction over those blocks.
    gdimy = min(dev.sm_count, ceil_div(it_n, rows))
    staged = stages_inputs(dev)
    stages = _STAGES if staged else 1
    # Only inputs with a row (an axis of the iteration domain) are copied a row at a time
    # into the circular buffer; a persistent input without one (a norm's [H] weight, about
    # nothing per row in `size`) is the same for every row: each thread keeps its part in
    # registers across the row loop.
    row_inputs = [t for t in kept if t in fusion.inputs and _has_row_axis(fusion, ref, t)]
    input_bytes = size * rows * stages
    in_smem = staged or input_bytes + partial * rows > register_budget(dev)
    why = [f"inner persistent buffer {size} bytes per row, outer partial results {partial} "
           "bytes per row" + (" (projected)" if project else ""), *why,
           f"TIDx {bdimx} x batches {batches} x vector {v} covers {red_n}; {rows} rows per step "
           f"(TIDy); BIDy {gdimy} blocks loop over {it_n} rows",
           _inputs_line(dev, staged, in_smem, stages, rows, input_bytes)]
    smem = tuple(t.short_name for t in row_inputs) if in_smem else ()
    p = ReductionParams(
        tag="InnerOuter Persistent Heuristic", fastest_dim=True, persistent_kernel=True,
        project_persistent_buffers=project, combined_inner_outer=True,
        cross_block_inner_reduction=True, unroll_factor_inner_reduction=v,
        vectorize_inner_reduction=v > 1, batches_per_block_inner_reduction=batches,
        batches_per_block_outer_reduction=batches,
        cross_block_outer_reduction=True, cross_grid_outer_reduction=gdimy > 1,
        block_dim_outer_reduction=ParallelType.block_y,
        grid_dim_outer_reduction=ParallelType.grid_y if gdimy > 1 else ParallelType.serial,
        multiple_reds_per_blk=True, block_dim_inner_reduction=ParallelType.block_x,
        block_dim_iter_dom=ParallelType.block_y, grid_dim_iter_dom=ParallelType.grid_y,
        smem_persistent_buffers=smem, circular_buffer_stages=stages if smem else 0,
        rows_per_step=rows,
        lparams=LaunchParams(gdimx=1, gdimy=gdimy, bdimx=bdimx, bdimy=rows,
                             smem=input_bytes if smem else 0),
    )
    return record(p, why, info, trace)


def _inputs_line(dev: DeviceProperties, staged: bool, in_smem: bool, stages: int, rows: int,
                 input_bytes: int) -> str:
    """The derivation's line on where the row inputs live. How the stages are loaded is the
    lowering's decision (cp.async where the circular-buffer pass pipelines them), which the
    compiled launch's shared-memory breakdown reports."""
    if not in_smem:
        return "inputs in registers"
    cc = ".".join(str(x) for x in dev.compute_capability)
    why = f"compute capability {cc} >= 9.0: " if staged else "too large for registers: "
    if stages > 1:
        return (f"{why}inputs staged in shared memory, {stages} circular-buffer stages of {rows} rows, "
                f"{input_bytes} bytes")
    return f"{why}inputs in shared memory, one stage of {rows} rows (not circular-buffered), {input_bytes} bytes"


# ---- schedules -----------------------------------------------------------------------------------------------

def _prepare(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    if p.project_persistent_buffers:
        project_to_inputs(fusion, persistent_buffers(fusion), trace)


def _live_buffers(fusion: Fusion) -> list[TensorView]:
    return [t for t in persistent_buffers(fusion).persistent_buffers if t not in fusion.inputs]


def schedule_inner_or_outer(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    _prepare(fusion, p, trace)
    # After caching, an input buffer lives in its cache: find the buffers then.
    caches = tools.cache_inputs(fusion, trace=trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    buffers = _live_buffers(fusion)
    if p.smem_persistent_buffers:
        for b in buffers:
            b.set_memory_type(MemoryType.Shared)
            if trace is not None:
                trace.event("transform", b.short_name, "persistent buffer in shared memory")

    reds = reduction_tvs(fusion)
    ref = reds[0]
    n_iter = schedule_reference(ref, p)
    note_transform(trace, ref.short_name, "reference scheduled (persistent)")
    tools.propagate_max_info(ref)
    tools.parallelize_all_like(ref)
    for r in reds:
        rf = rfactor_serial(r, trace)
        if rf is not None:
            note_transform(trace, r.short_name, f"rfactor: per-thread partial reduction in {rf.short_name}")
    v = p.unroll_factor_inner_reduction if p.fastest_dim else p.unroll_factor_iter_dom
    outs = [o for o in fusion.outputs if isinstance(o, TensorView) and o not in fusion.inputs]
    vectorize_io(fusion, [*caches, *outs], v)
    inline(fusion, buffers, n_iter, trace)
    separate_reduction_phases(fusion, reds, n_iter, trace)


def separate_reduction_phases(fusion: Fusion, reds: list[TensorView], n_iter: int,
                              trace: Trace | None) -> list[TensorView]:
    """Keep what a reduction reads apart from what reads its result, past the iteration
    axes. Returns the tensors whose inlining it lowered.

    Right of the first `n_iter` loops (the rows), each reduction `red` runs a loop of
    its own that closes before its result is read. A tensor inlined past `n_iter` shares
    those loops with all of its consumers, so it joins them into one loop nest; when one
    such nest holds a tensor `red` is computed from and one computed from `red`'s result,
    the nest would have to run both before and after the reduction (the lowering refuses
    it as a dependence cycle). That happens when a tensor on the way to `red` is also read
    by a branch that the inlining joins with the tensors after `red` (RMS-norm backward:
    grad_out feeds both grad_out * w, summed per row, and grad_out * x_hat, whose loop
    shares 1 / rms with grad_input). Such a tensor is what nvFuser calls a persistent
    buffer: it is inlined at the iteration axes only, and kept across the reduction.
    """
    changed: list[TensorView] = []
    phases = []
    for red in reds:
        sibs = set(sibling_tvs(red))
        after: set[TensorView] = set()
        for x in sibs:
            after |= downstream_tvs(x)
        phases.append((upstream_tvs(red) - set(fusion.inputs), after - sibs, sibs))
    while True:
        nest = _nests_past(fusion, n_iter)
        glue = None
        for up, after, sibs in phases:
            mixed = {nest[t] for t in up} & {nest[t] for t in after}
            if not mixed:
                continue
            # An inlining path from `up` to `after` leaves `up` through such a tensor
            # (a producer of a tensor in `up` is in `up`; `red` itself is not inlined).
            glue = next((t for t in sorted(up, key=lambda t: t.name)
                         if t.compute_at_pos > n_iter and nest[t] in mixed
                         and any(c not in up and c not in sibs for c in consumers_of(t))), None)
            break
        if glue is None:
            return changed
        glue.inline_at(min(n_iter, glue.nloop), best_effort=True)
        changed.append(glue)
        if trace is not None:
            trace.event("transform", glue.short_name,
                        f"inlined at {glue.compute_at_pos} (iteration axes only): read before a "
                        "reduction and by a loop nest that also reads its result, it persists "
                        "across the reduction")


def _nests_past(fusion: Fusion, n_iter: int) -> dict[TensorView, TensorView]:
    """Each tensor's loop nest right of the first `n_iter` loops, named by one of its
    tensors: a tensor inlined past `n_iter` shares it with its consumers."""
    parent: dict[TensorView, TensorView] = {}

    def find(t: TensorView) -> TensorView:
        while parent.get(t, t) is not t:
            t = parent[t]
        return t

    for t in fusion.tensors():
        if t in fusion.inputs or t.compute_at_pos <= n_iter:
            continue
        for c in consumers_of(t):
            a, b = find(t), find(c)
            if a is not b:
                parent[a] = b
    return {t: find(t) for t in fusion.tensors()}


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
    _prepare(fusion, p, trace)
    caches = tools.cache_inputs(fusion, trace=trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    buffers = _live_buffers(fusion)
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


# ---- the schedulers -----------------------------------------------------------------------------------------------

class _Persistent(Scheduler):
    def reject_compile_time(self, fusion: Fusion) -> str | None:
        return persistent_compile_reject(fusion, self.type)

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        size, _, _ = _buffer_bytes(fusion, info)
        return _fits(size, info.device)

    def fit_shapes(self, fusion: Fusion, info: SchedulerRuntimeInfo, p: ReductionParams) -> tuple[
            list[list[ReductionParams]], Callable[[ReductionParams], int], Schedule]:
        """The block shapes `p`'s heuristic may fall back to (engine.schedule.persistent_fit),
        the elements a thread holds of each, and the schedule that realizes them."""
        dev = info.device
        props = reduction_properties(reduction_tvs(fusion)[0], info)
        red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
        size, project, pb = _buffer_bytes(fusion, info)
        names = tuple(t.short_name for t in _kept_buffers(pb, project))
        if p.fastest_dim:
            families = storage_families(p, names, size, max(1, p.lparams.bdimy),
                                        lambda q: inner_shapes(q, red_n, it_n, dev), smem_budget(dev))
            return families, row_elements, schedule_inner_or_outer
        families = storage_families(p, names, size, p.lparams.bdimx * p.unroll_factor_iter_dom,
                                    lambda q: outer_shapes(q, red_n, it_n, dev), smem_budget(dev))
        return families, column_elements, schedule_inner_or_outer


@register
class InnerPersistentScheduler(_Persistent):
    type = SchedulerType.inner_persistent

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        why = super().reject_runtime(fusion, info)
        if why is not None:
            return why
        props = reduction_properties(reduction_tvs(fusion)[0], info)
        dev = info.device
        if (props.total_reduction_numel >= dev.max_threads_per_sm * 4
                and props.total_iteration_numel < max(1, dev.sm_count // 8)):
            return "not enough blocks"
        return None

    def compute_heuristics(self, fusion: Fusion, info: SchedulerRuntimeInfo,
                           trace: Trace | None = None) -> ReductionParams:
        return inner_persistent_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        schedule_inner_or_outer(fusion, _check(params), trace)


@register
class OuterPersistentScheduler(_Persistent):
    type = SchedulerType.outer_persistent

    def compute_heuristics(self, fusion: Fusion, info: SchedulerRuntimeInfo,
                           trace: Trace | None = None) -> ReductionParams:
        return outer_persistent_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        schedule_inner_or_outer(fusion, _check(params), trace)


@register
class InnerOuterPersistentScheduler(_Persistent):
    type = SchedulerType.inner_outer_persistent

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        size, partial, _, _ = _inner_outer_sizes(fusion, info)
        dev = info.device
        # Inputs may go to shared memory; the partial outer results stay in registers.
        if partial * _ROWS_PER_STEP > register_budget(dev) or size > max(
                register_budget(dev), smem_budget(dev) // (_ROWS_PER_STEP * _STAGES)):
            return "not enough registers or shared memory for persistence"
        return _welford_in_row_loop(fusion, info)

    def compute_heuristics(self, fusion: Fusion, info: SchedulerRuntimeInfo,
                           trace: Trace | None = None) -> ReductionParams:
        return inner_outer_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        schedule_inner_outer(fusion, _check(params), trace)

    def fit_shapes(self, fusion: Fusion, info: SchedulerRuntimeInfo, p: ReductionParams) -> tuple[
            list[list[ReductionParams]], Callable[[ReductionParams], int], Schedule]:
        """The combined schedule's block shapes (its inputs stay where the heuristic put them)."""
        ref = next(r for r in reduction_tvs(fusion) if is_fastest_dim_reduction(r))
        props = reduction_properties(ref, info)
        red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
        return [inner_outer_shapes(p, red_n, it_n, info.device)], row_elements, schedule_inner_outer


def _row_steps(p: ReductionParams, it_n: int) -> int:
    """Iterations of the serial loop over each block's rows in the inner-outer schedule:
    the iteration domain split by rows per step, the grid and the stages, as
    schedule_inner_outer splits it."""
    rows = ceil_div(max(1, it_n), p.rows_per_step)
    return ceil_div(ceil_div(rows, p.lparams.gdimy), max(1, p.circular_buffer_stages))


def _welford_in_row_loop(fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
    """An inner Welford whose result is read per row needs that read inside the serial
    loop over each block's rows, but a Welford's sibling outputs are never inlined: with
    more than one step the loop would have to close before the Welford and reopen after."""
    reds = reduction_tvs(fusion)
    for red in reds:
        e = red.definition
        if not (is_fastest_dim_reduction(red) and isinstance(e, ex.WelfordOp)):
            continue
        if not any(consumers_of(o) for o in e.outputs if isinstance(o, TensorView)):
            continue
        p = inner_outer_heuristics(fusion, info, None)
        steps = _row_steps(p, reduction_properties(red, info).total_iteration_numel)
        if steps > 1:
            return (f"inner Welford {red.short_name} is read in the loop over each block's rows "
                    f"({steps} steps), but its outputs cannot be inlined into it")
    return None


def _check(params: HeuristicParams | None) -> ReductionParams:
    if not isinstance(params, ReductionParams) or not params.persistent_kernel:
        raise ScheduleError("persistent schedulers need persistent ReductionParams")
    return params


__all__ = [
    "InnerOuterPersistentScheduler", "InnerPersistentScheduler", "OuterPersistentScheduler",
    "project_to_inputs", "smem_allocation_from_loop", "consumers_of", "replace",
    "schedule_reduction_fusion",
]
