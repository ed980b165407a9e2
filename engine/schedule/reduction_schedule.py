"""The reduction schedule's transforms, shared with the persistent schedulers: the
reference reduction is put in canonical form and split and parallelized as the parameters
say (`schedule_reference`), its transforms are propagated to every tensor, each reduction
is rfactored so that the serial and vectorized part is a per-thread partial reduction and
only the block/grid part is left to the reduction itself (`rfactor_serial`), global-memory
accesses are vectorized (`vectorize_io`) and tensors are inlined (`inline`).
`schedule_reduction_fusion` runs these steps, after caching the inputs and outputs."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from engine.analysis.persistent import memory_order, pattern_order, reduction_tvs
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.dependencies import upstream_tvs
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, Split
from engine.ir.logical_map import consumers_of, logical_map, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.reduction_checks import reduces_expansion
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.tools import note_transform

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


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


def off_reference_inner_dim(ref: TensorView, tvs: list[TensorView],
                            to_ref: dict[TensorView, dict[IterDomain, IterDomain]]) -> set[TensorView]:
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
    reference does not reach) is not counted. `to_ref`: _ids_to_reference(ref), asked
    before rfactor, which gives the reference new logical ids."""
    order = pattern_order(ref)
    if not order:
        return set()
    out = set()
    for tv in tvs:
        i = innermost_allocated(tv)
        r = to_ref.get(tv, {}).get(i) if i is not None else None
        if r is not None and r is not order[-1]:
            out.add(tv)
    return out


def _ids_to_reference(ref: TensorView) -> dict[TensorView, dict[IterDomain, IterDomain]]:
    """Each tensor the logical maps reach from `ref`: its logical ids -> the reference's,
    along the first path found (broadcasts mapped to what they broadcast against)."""
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
    return to_ref


def reduction_invariant(fusion: Fusion, ref: TensorView,
                        to_ref: dict[TensorView, dict[IterDomain, IterDomain]]) -> list[TensorView]:
    """Computed tensors that do not vary along the reference's reduced axes: each of their
    axes the maps tie to a reduced one is a broadcast (a row's max read back from global
    memory, the label's logit minus it). Inlined only at the iteration axes, they are
    computed once a row before the reduction's loops; inlined as deep as their readers,
    a row's value was loaded again for every element, and an output among them was written
    inside the loops, where its store kept the loop's loads from running ahead (a cross
    entropy's sum of exponentials at 1.9 TB/s). `to_ref` as for off_reference_inner_dim."""
    reduced = {i for i in ref.domain.logical if i.is_reduction}
    out = []
    for tv, ids in to_ref.items():
        if tv in fusion.inputs or tv.definition is None or isinstance(tv.definition, (ex.ReductionOp, ex.WelfordOp)):
            continue
        tied = [i for i, r in ids.items() if r in reduced]
        if tied and all(i.is_broadcast for i in tied):
            out.append(tv)
    return out


def innermost_allocated(tv: TensorView) -> IterDomain | None:
    for i in reversed(tv.domain.maybe_allocation):
        if not (i.is_broadcast or i.is_reduction):
            return i
    return None


def _split_source(i: IterDomain, tv: TensorView) -> IterDomain | None:
    """The id whose inner part the vector `i` is: the input of its split, followed
    through the inner side of merges (the canonical merge of several axes) and the inner
    output of splits (a reshape's split of the innermost axis: its inner part is
    contiguous in memory) to a logical or allocation id of `tv`."""
    ends = set(tv.domain.logical) | set(tv.domain.maybe_allocation)
    d = i.definition
    if not isinstance(d, Split):
        return None
    i = d.in_id
    while i not in ends:
        m = i.definition
        if isinstance(m, Merge):
            i = m.inner
        elif isinstance(m, Split) and m.inner is i:
            i = m.in_id
        else:
            return None
    return i


def io_tensors(fusion: Fusion, caches: list[TensorView]) -> list[TensorView]:
    """Tensors that read or write global memory: input caches and fusion outputs."""
    outs = [o for o in fusion.outputs if isinstance(o, TensorView) and o not in fusion.inputs]
    return [*caches, *[o for o in outs if o not in caches]]


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
    caches = tools.cache_inputs(fusion, keep=_reduced_through_expansion(fusion), trace=trace,
                                elementwise_of_lookups=True)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    reds = reduction_tvs(fusion)
    ref = reds[0]
    to_ref = _ids_to_reference(ref)  # before rfactor gives the reference new logical ids
    off_inner = off_reference_inner_dim(ref, io_tensors(fusion, caches), to_ref)
    invariant = reduction_invariant(fusion, ref, to_ref)
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
    inline(fusion, persistent or [], n_iter, trace, invariant)
    return ref


def _schedule_other_components(fusion: Fusion, reds: list[TensorView], p: ReductionParams,
                               trace: Trace | None) -> None:
    """Schedule the parts of the fusion that share no tensor with the reference's, each
    like the reference from its own first reduction. The segmenter merges reductions of
    one signature that share a producer in the complete fusion (CombineReductions); with
    that producer in another segment they are disconnected here, and propagation from the
    reference never reaches them: left unscheduled, every thread ran their whole
    reduction serially (a local buffer of 4097 elements at H=4097, which fails to lower).
    A part joined to the reference's only through a tensor with no axes (a token count
    dividing a loss sum: both full reductions, met in a 0-dim division) is apart too.
    Their reductions have the reference's pattern (the scheduler refuses others), so the
    same parameters fit them."""
    done = tools.connected_tensors(reds[0], through_scalars=False)
    for r in reds[1:]:
        if r in done:
            continue
        part = tools.connected_tensors(r, through_scalars=False)
        done |= part
        schedule_reference(r, p)
        note_transform(trace, r.short_name, "scheduled like the reference (it shares no tensor with it)")
        tools.propagate_max_info(r, sorted(part, key=lambda t: t.name))
        tools.parallelize_all_like(r, selected=[t for t in part if t is not r])


def inline(fusion: Fusion, persistent: list[TensorView], n_iter: int, trace: Trace | None,
           invariant: Collection[TensorView] = ()) -> None:
    """Inline every tensor as deep as it goes, but `persistent` buffers and the
    `invariant` tensors (reduction_invariant) only at the `n_iter` iteration axes."""
    keep = [t for t in persistent if t not in fusion.inputs]
    hoisted = [t for t in invariant if t not in keep]
    others = [t for t in fusion.tensors() if t not in keep and t not in hoisted]  # type: ignore[misc]
    tools.inline_most(fusion, others)  # type: ignore[arg-type]
    for t in keep:
        t.inline_at(min(n_iter, t.nloop), best_effort=True)
        note_transform(trace, t.short_name, f"persistent buffer inlined at {t.compute_at_pos} (iteration axes only)")
    for t in hoisted:
        t.inline_at(min(n_iter, t.nloop), best_effort=True)
        note_transform(trace, t.short_name, f"inlined at {t.compute_at_pos}: it does not vary along the reduced axes")
