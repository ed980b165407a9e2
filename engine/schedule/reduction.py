"""The reduction scheduler: inner (fastest dim) and outer reductions without persistence.

Heuristics follow nvFuser's reduction_heuristic shape: threads along the dimension
that is contiguous in memory (TIDx), vectorized loads of up to 16 bytes on it,
several reductions per block (TIDy) when a row is short, and a grid reduction
(blockIdx.y) when there are too few rows to fill the device. The schedule applies
them to the first reduction tensor (the reference), propagates its transforms to
every tensor, then rfactors each reduction so that the serial and vectorized part
is a per-thread partial reduction and only the block/grid part is left to the
reduction itself. The helpers here are shared with the persistent schedulers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from engine.analysis.coverage import uncovered_axis
from engine.analysis.logical_map import consumers_of, logical_map, producers_of
from engine.analysis.persistent import (
    ReductionProperties,
    downstream_tvs,
    dtype_bytes,
    memory_order,
    pattern_order,
    persistent_buffers,
    reduction_pattern,
    reduction_properties,
    reduction_tvs,
    upstream_tvs,
)
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir import quant_exprs
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, Split
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.registry import register
from engine.schedule.tools import ceil_div, next_pow2, note_transform, prev_pow2

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


@dataclass(frozen=True)
class ReductionParams(HeuristicParams):
    """nvFuser's ReductionParams (the fields this engine schedules by).

    As in nvFuser, a 2-D schedule calls its one reduction domain the "inner"
    reduction whichever memory dimension it is on; the "outer" fields describe the
    outer reductions of a combined inner-outer (or 3-D) schedule.

    str() follows nvFuser's toString line by line; three lines are this engine's:
    "Circular buffer: stages N" (nvFuser prints its CircularBufferOptions there),
    "Combined Inner Outer" with the outer reduction's line (nvFuser prints that line
    for 3-D schedules only) and "Shared Memory Persistent Buffers: ...".
    """

    fastest_dim: bool = True
    persistent_kernel: bool = False
    project_persistent_buffers: bool = False
    cross_block_inner_reduction: bool = False
    cross_grid_inner_reduction: bool = False
    cross_block_outer_reduction: bool = False
    cross_grid_outer_reduction: bool = False
    unroll_factor_inner_reduction: int = 1
    vectorize_inner_reduction: bool = False
    unroll_factor_iter_dom: int = 1
    vectorize_iter_dom: bool = False
    batches_per_block_inner_reduction: int = 1
    batches_per_block_outer_reduction: int = 1
    multiple_reds_per_blk: bool = False
    combined_inner_outer: bool = False
    block_dim_inner_reduction: ParallelType = ParallelType.serial
    grid_dim_inner_reduction: ParallelType = ParallelType.serial
    block_dim_iter_dom: ParallelType = ParallelType.serial
    grid_dim_iter_dom: ParallelType = ParallelType.serial
    block_dim_outer_reduction: ParallelType = ParallelType.serial
    grid_dim_outer_reduction: ParallelType = ParallelType.serial
    # names of the persistent buffers kept in shared memory ("T7"); registers otherwise
    smem_persistent_buffers: tuple[str, ...] = ()
    # inner-outer schedule with its inputs staged in shared memory: circular-buffer stages
    circular_buffer_stages: int = 0
    # rows of the iteration domain a block handles per step (inner-outer)
    rows_per_step: int = 1

    def is_unrolled(self) -> bool:
        return self.unroll_factor_inner_reduction > 1 or self.unroll_factor_iter_dom > 1

    def __str__(self) -> str:
        s = "\n===== Reduction Parameters ========\n"
        s += (f"Tag: {self.tag}" if self.tag else "") + "\n"
        s += "Red On Fastest Dim\n" if self.fastest_dim else "Red On Slow Dim\n"
        s += "Persistent Kernel\n" if self.persistent_kernel else ""
        s += "Project Persistent Buffers\n" if self.project_persistent_buffers else ""
        if self.batches_per_block_inner_reduction > 1 or self.persistent_kernel:
            s += f"Batches per block: {self.batches_per_block_inner_reduction}\n"
        if self.circular_buffer_stages > 1:
            s += f"Circular buffer: stages {self.circular_buffer_stages}\n"
        else:
            s += "Circular buffer: not used\n"
        if self.combined_inner_outer:
            s += "Combined Inner Outer\nOuter Reduction: "
            if self.cross_block_outer_reduction:
                s += f"cross block - {self.block_dim_outer_reduction} / "
            if self.cross_grid_outer_reduction:
                s += f"cross grid - {self.grid_dim_outer_reduction} / "
            if self.batches_per_block_outer_reduction > 1 or self.persistent_kernel:
                s += f"persistent batch - {self.batches_per_block_outer_reduction}"
        s += "\nIteration Domain: "
        if self.grid_dim_iter_dom != ParallelType.serial:
            s += f"{self.grid_dim_iter_dom} / "
        if self.block_dim_iter_dom != ParallelType.serial:
            s += f"{self.block_dim_iter_dom} / "
        s += "multiple reductions per block / " if self.multiple_reds_per_blk else ""
        s += "vectorize / " if self.vectorize_iter_dom else ""
        s += "unroll / " if self.unroll_factor_iter_dom > 1 and not self.vectorize_iter_dom else ""
        if self.unroll_factor_iter_dom > 1:
            s += f"factor {self.unroll_factor_iter_dom}"
        s += "\nInner Reduction Domain: "
        if self.cross_block_inner_reduction:
            s += f"cross block - {self.block_dim_inner_reduction} / "
        if self.cross_grid_inner_reduction:
            s += f"cross grid - {self.grid_dim_inner_reduction} / "
        if self.batches_per_block_inner_reduction > 1 or self.persistent_kernel:
            s += f"persistent batch - {self.batches_per_block_inner_reduction} / "
        s += "vectorize / " if self.vectorize_inner_reduction else ""
        s += ("unroll / " if self.unroll_factor_inner_reduction > 1
              and not self.vectorize_inner_reduction else "")
        if self.unroll_factor_inner_reduction > 1:
            s += f"factor {self.unroll_factor_inner_reduction}"
        if self.smem_persistent_buffers:
            s += "\nShared Memory Persistent Buffers: " + ", ".join(self.smem_persistent_buffers)
        s += f"\n{self.lparams}\n"
        s += f"Compile Parameters: index_type = {self.index_type}\n"
        s += "====================================\n"
        return s


# ---- small integer helpers ---------------------------------------------------------------------

# ---- checks shared with the persistent schedulers ---------------------------------------------------

def has_sub_byte(fusion: Fusion) -> bool:
    return any(t.dtype.bits % 8 for t in fusion.tensors())  # type: ignore[attr-defined]


def unsupported_ops(fusion: Fusion) -> str | None:
    """Ops no reduction-based scheduler handles (nvFuser routes them elsewhere)."""
    for e in fusion.exprs():
        if isinstance(e, (ex.MatmulOp, ex.LinearOp)):
            return "no support for mma ops."
        if isinstance(e, (ex.SliceOp, ex.PadOp, ex.CatOp)):
            return "no support for resize ops"
        if type(e).__module__ == quant_exprs.__name__:
            return f"no support for {e.op_name}"
    return None


def gather_before_reduction(fusion: Fusion, reds: list[TensorView]) -> bool:
    """A gather-like op (take_along_axis, index_select) whose result a reduction reads."""
    for r in reds:
        for t in upstream_tvs(r) | {r}:
            if isinstance(t.definition, (ex.GatherOp, ex.IndexSelectOp, ex.SelectOp)):
                return True
    return False


def post_reduction_broadcast(fusion: Fusion, reds: list[TensorView]) -> bool:
    """A reduction's result broadcast again: a normalization, not a plain reduction."""
    for r in reds:
        for t in downstream_tvs(r):
            if isinstance(t.definition, ex.BroadcastOp):
                return True
    return False


def uncovered_reason(fusion: Fusion, refs: list[TensorView]) -> str | None:
    """Why a schedule propagated from `refs` would leave an axis of the fusion without
    threads (engine.analysis.coverage): every thread would run it whole, from a local
    buffer as long as the axis."""

    found = uncovered_axis(fusion, refs)
    if found is None:
        return None
    tv, axis = found
    return (f"{tv.short_name} axis {axis} maps to no axis of the reference "
            f"{', '.join(r.short_name for r in refs)}: each thread would run it whole "
            "(unsupported post reduction normalization)")


def common_reject(fusion: Fusion, kind: SchedulerType) -> str | None:
    """The first checks of every reduction-based scheduler, in nvFuser's order."""
    if has_sub_byte(fusion):
        return "Does not support sub-byte data types."
    reds = reduction_tvs(fusion)
    if not reds:
        return "No reduction op to schedule" if kind == SchedulerType.reduction else "needs a reduction op"
    if not any(isinstance(v, TensorView) for v in fusion.inputs):
        return "Scheduling not supported with no input"
    why = tools.memory_promotion_reason(fusion)
    if why is not None:
        return why
    return unsupported_ops(fusion)


# ---- heuristics ---------------------------------------------------------------------------------------

def innermost_memory_dim(sizes: list[int], strides: list[int]) -> int | None:
    """Index of the dimension with stride 1 (the innermost in memory), ignoring size-1 dims."""
    cand = [k for k, (n, s) in enumerate(zip(sizes, strides)) if n != 1]
    if not cand:
        return None
    return min(cand, key=lambda k: (strides[k], -k))


def vectorize_factor(fusion: Fusion, info: SchedulerRuntimeInfo, inner_numel: int) -> tuple[int, list[str]]:
    """Elements per vectorized access on the innermost dimension, with why.

    Up to 16 bytes of the widest input, a power of two dividing the innermost extent
    and every input's innermost extent, on inputs whose innermost dimension has
    stride 1 and whose address is aligned to the vector (as nvFuser's
    vectorize_helper on the reduced tensor's producer, simplified to inputs).
    """
    why: list[str] = []
    tv_inputs = [v for v in fusion.inputs if isinstance(v, TensorView) and info.numel(v) > 0]
    widest = max((dtype_bytes(t) for t in tv_inputs), default=4)
    v = max(1, 16 // widest)
    why.append(f"16 bytes / {widest}-byte elements -> {v}")
    while v > 1 and inner_numel % v:
        v //= 2
    why.append(f"divides the innermost extent {inner_numel} -> {v}")
    for t in tv_inputs:
        sizes, strides = info.sizes(t), info.strides(t) or []
        k = innermost_memory_dim(sizes, strides)
        if k is None:
            continue
        if strides[k] != 1:
            why.append(f"{t.short_name}: innermost stride {strides[k]} != 1 -> 1")
            return 1, why
        while v > 1 and (sizes[k] % v or info.alignment(t) < v * dtype_bytes(t)):
            v //= 2
        # Every row must start aligned too: an outer stride that is not a multiple of the
        # vector (a padded or sliced input) puts later rows' vectors off alignment.
        for d, (n, st) in enumerate(zip(sizes, strides)):
            while d != k and n > 1 and v > 1 and st % v:
                v //= 2
    why.append(f"every input's innermost extent, outer strides and alignment allow {v}")
    return v, why


def reduction_heuristics(
    fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None, tag: str = "Reduction heuristics"
) -> ReductionParams:
    """Block and grid shape of a non-persistent inner or outer reduction."""
    reds = reduction_tvs(fusion)
    props = reduction_properties(reds[0], info)
    dev = info.device
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    why = [f"reduction numel {red_n}, iteration numel {it_n}, inner-most numel "
           f"{props.inner_most_dimension_numel}", *why]
    if props.fastest_dim_reduction:
        after_v = ceil_div(red_n, v)
        bdimx = min(next_pow2(after_v), 512)
        bdimy = 1
        if bdimx < 128 and it_n > 1:
            bdimy = min(128 // bdimx, next_pow2(it_n))
        gdimx = ceil_div(it_n, bdimy)
        serial = ceil_div(after_v, bdimx)
        gdimy = 1
        if gdimx < dev.sm_count and serial >= 8:
            # Too few rows to fill the SMs and long rows: split each row over blocks.
            gdimy = min(prev_pow2(serial // 4), max(1, prev_pow2(dev.sm_count * 4 // gdimx)))
        why.append(f"TIDx {bdimx} over {after_v} vectors; TIDy {bdimy} rows per block; "
                   f"BIDx {gdimx}; BIDy {gdimy} (grid reduction when rows < {dev.sm_count} SMs)")
        p = ReductionParams(
            tag=tag, fastest_dim=True,
            cross_block_inner_reduction=True, cross_grid_inner_reduction=gdimy > 1,
            unroll_factor_inner_reduction=v, vectorize_inner_reduction=v > 1,
            multiple_reds_per_blk=bdimy > 1,
            block_dim_inner_reduction=ParallelType.block_x,
            grid_dim_inner_reduction=ParallelType.grid_y if gdimy > 1 else ParallelType.serial,
            block_dim_iter_dom=ParallelType.block_y if bdimy > 1 else ParallelType.serial,
            grid_dim_iter_dom=ParallelType.grid_x if props.total_iteration_numel > 0 else ParallelType.serial,
            lparams=LaunchParams(gdimx=gdimx, gdimy=gdimy, bdimx=bdimx, bdimy=bdimy),
        )
    else:
        after_v = ceil_div(it_n, v)
        bdimx = min(next_pow2(after_v), 128)
        bdimy = min(max(1, 256 // bdimx), next_pow2(red_n))
        gdimx = ceil_div(after_v, bdimx)
        serial = ceil_div(red_n, bdimy)
        while gdimx < dev.sm_count and bdimx > 32 and serial < 32:
            # A short reduction over few column blocks: narrower blocks (down to a warp, whose
            # row segment is still one coalesced access) spread the columns over more SMs,
            # more threads of each block split the rows (fp32 [32, 4096] summed over its 32
            # rows would otherwise run in 8 blocks of 128 x 2).
            bdimx //= 2
            bdimy = min(max(1, 256 // bdimx), next_pow2(red_n))
            gdimx = ceil_div(after_v, bdimx)
            serial = ceil_div(red_n, bdimy)
        gdimy = 1
        if gdimx < dev.sm_count and serial >= 32:
            # Two blocks per SM: one block of 256 threads keeps too few loads in flight.
            gdimy = min(prev_pow2(serial // 8), max(1, prev_pow2(dev.sm_count * 2 // gdimx)))
        why.append(f"TIDx {bdimx} over {after_v} iteration vectors; TIDy {bdimy} over the "
                   f"reduction; BIDx {gdimx}; BIDy {gdimy} (grid reduction when columns < SMs)")
        p = ReductionParams(
            tag=tag, fastest_dim=False,
            cross_block_inner_reduction=bdimy > 1, cross_grid_inner_reduction=gdimy > 1,
            unroll_factor_iter_dom=v, vectorize_iter_dom=v > 1,
            block_dim_inner_reduction=ParallelType.block_y if bdimy > 1 else ParallelType.serial,
            grid_dim_inner_reduction=ParallelType.grid_y if gdimy > 1 else ParallelType.serial,
            block_dim_iter_dom=ParallelType.block_x, grid_dim_iter_dom=ParallelType.grid_x,
            lparams=LaunchParams(gdimx=gdimx, gdimy=gdimy, bdimx=bdimx, bdimy=bdimy),
        )
    return record(p, why, info, trace)


def record(p: ReductionParams, why: list[str], info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    idx = "int" if info.index_type().name == "Int32" else "int64_t"
    p = replace(p, derivation=tuple(why), index_type=idx)
    if trace is not None:
        for line in why:
            trace.event("heuristic", p.tag, line)
    return p


# ---- scheduling ------------------------------------------------------------------------------------------

def canonicalize(red: TensorView, fastest: bool) -> tuple[bool, bool]:
    """Reorder `red`'s loop in memory order, iteration ids together and reduction ids
    together ([I, R] for an inner reduction, [R, I] for an outer one), and merge each
    group to one axis. Returns (has iteration axis, has reduction axis)."""
    order = [i for i in memory_order(red) if i in red.domain.loop]
    order += [i for i in red.domain.loop if i not in order]
    it = [i for i in order if not i.is_reduction]
    rd = [i for i in order if i.is_reduction]
    groups = [it, rd] if fastest else [rd, it]
    new = [i for g in groups for i in g]
    red.reorder([red.domain.loop.index(i) for i in new])
    pos = 0
    for g in groups:
        if not g:
            continue
        for _ in range(len(g) - 1):
            red.merge(pos)
        pos += 1
    return bool(it), bool(rd)


def schedule_reference(red: TensorView, p: ReductionParams) -> int:
    """Split and parallelize the reference reduction as `p` says; returns how many
    leading loop axes are iteration axes (where persistent buffers are inlined)."""
    bx, by, gy = p.lparams.bdimx, p.lparams.bdimy, p.lparams.gdimy
    has_i, _ = canonicalize(red, p.fastest_dim)
    if p.fastest_dim:
        r = 1 if has_i else 0
        v = p.unroll_factor_inner_reduction
        if v > 1:
            red.split(r, v)
        if p.persistent_kernel:
            # Outer split: a fixed number of batches each thread keeps in registers.
            red.split(r, p.batches_per_block_inner_reduction, inner_split=False)
            red.parallelize(r + 1, ParallelType.block_x)
        else:
            red.split(r, bx)
            red.parallelize(r + 1, ParallelType.block_x)
            if gy > 1:
                red.split(r, gy, inner_split=False)
                red.parallelize(r, ParallelType.grid_y)
        n_iter = 0
        if has_i:
            if by > 1:
                red.split(0, by)
                red.parallelize(1, ParallelType.block_y)
                n_iter = 2
            else:
                n_iter = 1
            red.parallelize(0, ParallelType.grid_x)
        return n_iter
    # Outer reduction: [R, I] with I innermost in memory.
    if has_i:
        v = p.unroll_factor_iter_dom
        if v > 1:
            red.split(1, v)
        red.split(1, bx)
        red.parallelize(1, ParallelType.grid_x)
        red.parallelize(2, ParallelType.block_x)
    if p.persistent_kernel:
        red.split(0, p.batches_per_block_inner_reduction, inner_split=False)
        red.parallelize(1, ParallelType.block_y)
    else:
        if by > 1:
            red.split(0, by)
            red.parallelize(1, ParallelType.block_y)
        if gy > 1:
            red.split(0, gy, inner_split=False)
            red.parallelize(0, ParallelType.grid_y)
    # Iteration axes outermost so that producers and consumers share them; the
    # vectorized iteration axis stays innermost.
    loop = red.domain.loop
    it_ids = [i for i in loop if not i.is_reduction]
    vect = [loop[-1]] if has_i and p.unroll_factor_iter_dom > 1 else []
    outer_it = [i for i in it_ids if i not in vect]
    rd_ids = [i for i in loop if i.is_reduction]
    # Parallel reduction axes before the serial ones: serial ones are rfactored.
    rd_ids.sort(key=lambda i: i.parallel_type == ParallelType.serial)
    new = outer_it + rd_ids + vect
    red.reorder([loop.index(i) for i in new])
    return len(outer_it)


def rfactor_serial(red: TensorView, trace: Trace | None = None) -> TensorView | None:
    """rfactor the serial reduction axes of `red` when a parallel one is left: the
    partial reduction runs per thread, `red` then reduces across threads/blocks.
    When the primitive refuses, `red` reduces in one op and the trace says why."""
    # Welfords are rfactored too: the partial (avg, var_sum, count) per thread are
    # combined across threads/blocks by the WelfordOp that stays.
    if not isinstance(red.definition, (ex.ReductionOp, ex.WelfordOp)):
        return None
    loop = red.domain.loop
    serial = [k for k, i in enumerate(loop) if i.is_reduction and not i.is_parallelized]
    parallel = [k for k, i in enumerate(loop) if i.is_reduction and i.is_parallelized]
    if not serial or not parallel:
        return None
    try:
        return red.rfactor(serial)
    except ScheduleError as e:
        note_transform(trace, red.short_name, f"not rfactored, reduced in one op: {e}")
        return None


def vectorize_io(fusion: Fusion, tvs: list[TensorView], v: int,
                 off_inner: Collection[TensorView] = ()) -> list[TensorView]:
    """Vectorize the innermost loop axis of global-memory accesses whose axis is the
    inner output of a split by `v` (the reference's vectorized split, propagated), but
    not those of `off_inner` (off_reference_inner_dim)."""
    done: list[TensorView] = []
    if v <= 1:
        return done
    # Global-only tensors (seeds 000 and 004) are accessed by runtime functions with
    # their own indexing: never vectorized by a schedule.
    kept = tools.global_only(fusion)
    for tv in tvs:
        if tv in kept or not tv.domain.loop or tv in off_inner:
            continue
        last = tv.domain.loop[-1]
        d = last.definition
        if not (isinstance(d, Split) and d.inner is last and d.factor.is_const
                and d.factor.evaluate() == v) or last.is_reduction or last.is_broadcast:
            continue
        # Only a split of the tensor's innermost allocated axis is contiguous in memory,
        # and an axis already bound to threads stays theirs.
        if last.is_parallelized or _split_source(last, tv) is not innermost_allocated(tv):
            continue
        last.parallelize(ParallelType.vectorize)
        done.append(tv)
    return done


def off_reference_inner_dim(ref: TensorView, tvs: list[TensorView]) -> set[TensorView]:
    """Those of `tvs` whose innermost allocated axis is another axis of the reference
    reduction than its innermost one in memory: their vectors would not move along the
    reference's (nvFuser vectorizes only getInputsOutputsWithInnerDim). A [C] input
    broadcast to [N, C, H] in a schedule that merges every axis (a reduction over all of
    them) gets the reference's vector split on C, the merges with N and H it lacks being
    skipped: a vector of consecutive C elements where the reference's runs along H. Its
    cache, vectorized, runs that vector past its compute-at position in loops promoted to
    the reference's, which cannot index it ('axis ... cannot be indexed from the loop
    nest'); unvectorized it is inlined whole. A tensor whose innermost axis the logical
    maps do not tie to the reference (across a reshape, or in a part of the fusion the
    reference does not reach) is not counted. Asked before rfactor, which gives the
    reference new logical ids."""
    order = pattern_order(ref)
    if not order:
        return set()
    # Each reached tensor's logical ids -> the reference's, along the first path found.
    to_ref: dict[TensorView, dict[IterDomain, IterDomain]] = {ref: {i: i for i in ref.domain.logical}}
    queue = [ref]
    while queue:
        src = queue.pop(0)
        consumers = consumers_of(src)
        for nb in [*consumers, *producers_of(src)]:
            if nb in to_ref:
                continue
            if nb in consumers:
                m = logical_map(src, nb, map_broadcast=True)
                to_ref[nb] = {m[i]: r for i, r in to_ref[src].items() if i in m}
            else:
                m = logical_map(nb, src, map_broadcast=True)
                to_ref[nb] = {q: to_ref[src][c] for q, c in m.items() if c in to_ref[src]}
            queue.append(nb)
    out = set()
    for tv in tvs:
        i = innermost_allocated(tv)
        r = to_ref.get(tv, {}).get(i) if i is not None else None
        if r is not None and r is not order[-1]:
            out.add(tv)
    return out


def innermost_allocated(tv: TensorView) -> IterDomain | None:
    for i in reversed(tv.domain.maybe_allocation):
        if not (i.is_broadcast or i.is_reduction):
            return i
    return None


def _split_source(i: IterDomain, tv: TensorView) -> IterDomain | None:
    """The id whose inner part the vector `i` is: the input of its split, followed
    through the inner side of merges (the canonical merge of several axes) to a
    logical or allocation id of `tv`."""
    ends = set(tv.domain.logical) | set(tv.domain.maybe_allocation)
    d = i.definition
    if not isinstance(d, Split):
        return None
    i = d.in_id
    while i not in ends:
        m = i.definition
        if not isinstance(m, Merge):
            return None
        i = m.inner
    return i


def io_tensors(fusion: Fusion, caches: list[TensorView]) -> list[TensorView]:
    """Tensors that read or write global memory: input caches and fusion outputs."""
    outs = [o for o in fusion.outputs if isinstance(o, TensorView) and o not in fusion.inputs]
    return [*caches, *[o for o in outs if o not in caches]]


def reduces_expansion(red: TensorView) -> bool:
    """Whether `red` reduces an expanded broadcast axis of its input."""
    d = red.definition
    src = d.inputs[0] if d is not None else None
    if not isinstance(src, TensorView):
        return False
    ids = [i for i in src.domain.logical if not i.is_reduction]
    return any(i.has_expanded_extent for i, o in zip(ids, red.domain.logical) if o.is_reduction)


def _reduced_through_expansion(fusion: Fusion) -> Callable[[TensorView], bool]:
    """Inputs upstream of a reduction over an expanded broadcast axis. The reference merges
    that axis with the input's own ones, which the input's cache cannot replay (it has no
    such axis), so the cache would stay un-inlined in registers while each thread reads
    elements another computed: such inputs are read from
    global memory where needed."""
    upstream: set[TensorView] = set()
    for e in fusion.exprs():
        if isinstance(e, ex.ReductionOp | ex.WelfordOp) and isinstance(e.inputs[0], TensorView):
            out = e.outputs[0]
            assert isinstance(out, TensorView)
            if reduces_expansion(out):
                upstream |= upstream_tvs(e.inputs[0])
    return lambda tv: tv in upstream


def schedule_reduction_fusion(
    fusion: Fusion, p: ReductionParams, trace: Trace | None = None,
    persistent: list[TensorView] | None = None,
) -> TensorView:
    """The common schedule: caches, reference, propagation, rfactor, vectorize, inline.

    Returns the reference reduction. `persistent` (persistent kernels): tensors to
    inline only at the iteration axes, so that they stay alive across the reduction.
    """
    caches = tools.cache_inputs(fusion, keep=_reduced_through_expansion(fusion), trace=trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    reds = reduction_tvs(fusion)
    ref = reds[0]
    off_inner = off_reference_inner_dim(ref, io_tensors(fusion, caches))
    n_iter = schedule_reference(ref, p)
    note_transform(trace, ref.short_name, "reference scheduled")
    tools.propagate_max_info(ref)
    tools.parallelize_all_like(ref)
    _schedule_other_components(fusion, reds, p, trace)
    for r in reds:
        rf = rfactor_serial(r, trace)
        if rf is not None:
            note_transform(trace, r.short_name, f"rfactor: serial partial reduction in {rf.short_name}")
    v = p.unroll_factor_inner_reduction if p.fastest_dim else p.unroll_factor_iter_dom
    for tv in vectorize_io(fusion, io_tensors(fusion, caches), v, off_inner):
        note_transform(trace, tv.short_name, f"vectorized by {v}")
    inline(fusion, persistent or [], n_iter, trace)
    return ref


def _schedule_other_components(fusion: Fusion, reds: list[TensorView], p: ReductionParams,
                               trace: Trace | None) -> None:
    """Schedule the parts of the fusion that share no tensor with the reference's, each
    like the reference from its own first reduction. The segmenter merges reductions of
    one signature that share a producer in the complete fusion (CombineReductions); with
    that producer in another segment they are disconnected here, and propagation from the
    reference never reaches them: left unscheduled, every thread ran their whole
    reduction serially (a local buffer of 4097 elements at H=4097, which fails to lower).
    Their reductions have the reference's pattern (the scheduler refuses others), so the
    same parameters fit them."""
    done = tools.connected_tensors(reds[0])
    for r in reds[1:]:
        if r in done:
            continue
        part = tools.connected_tensors(r)
        done |= part
        schedule_reference(r, p)
        note_transform(trace, r.short_name, "scheduled like the reference (it shares no tensor with it)")
        tools.propagate_max_info(r, sorted(part, key=lambda t: t.name))
        tools.parallelize_all_like(r, selected=[t for t in part if t is not r])


def inline(fusion: Fusion, persistent: list[TensorView], n_iter: int, trace: Trace | None) -> None:
    keep = [t for t in persistent if t not in fusion.inputs]
    others = [t for t in fusion.tensors() if t not in keep]  # type: ignore[misc]
    tools.inline_most(fusion, others)  # type: ignore[arg-type]
    for t in keep:
        t.inline_at(min(n_iter, t.nloop), best_effort=True)
        note_transform(trace, t.short_name, f"persistent buffer inlined at {t.compute_at_pos} (iteration axes only)")


# ---- the scheduler ------------------------------------------------------------------------------------

def unmapped_reductions(reds: list[TensorView]) -> tuple[TensorView, TensorView] | None:
    for a, b in zip(reds, reds[1:]):
        if reduction_pattern(a) != reduction_pattern(b):
            return a, b
    return None


@register
class ReductionScheduler(Scheduler):
    type = SchedulerType.reduction

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        why = common_reject(fusion, self.type)
        if why is not None:
            return why
        reds = reduction_tvs(fusion)
        if any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
            return "View may interfere with reduction scheduling."
        pair = unmapped_reductions(reds)
        if pair is not None:
            return f"Un-mapped multi-reduction: {pair[0]} and {pair[1]}"
        if persistent_buffers(fusion).persistent_buffers:
            return "need persistent buffers that reduction scheduler doesn't handle"
        if post_reduction_broadcast(fusion, reds):
            return "has unsupported post reduction fusion"
        if gather_before_reduction(fusion, reds):
            return "has unsupported gather-like ops before reduction"
        # Parts without a reduction of their own are scheduled from no reference.
        return uncovered_reason(fusion, reds)

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> ReductionParams:
        return reduction_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        if not isinstance(params, ReductionParams):
            raise ScheduleError("reduction scheduler needs ReductionParams")
        schedule_reduction_fusion(fusion, params, trace)


def compute_reduction_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo) -> ReductionParams:
    """fd.sched.compute_reduction_heuristics(): the reduction scheduler's parameters."""
    return reduction_heuristics(fusion, info)


__all__ = [
    "ReductionParams", "ReductionProperties", "ReductionScheduler", "compute_reduction_heuristics",
]
