"""Tools every scheduler uses: caching inputs and outputs, propagation, parallelization,
inlining. Thin, named steps over the TensorView primitives so that what a scheduler does
reads as a list, and a user can do the same by hand with `fd.sched`.

The checks that every kernel scheduler applies live beside this module, and their names are
importable from here too: global_memory.py (tensors that must stay in global memory, and the
rules that keep them there) and self_mapping.py (two axes of one tensor that are one axis of
a tensor it is computed from)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.aten_exprs import aten_only, aten_only_name
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.logical_map import consumers_of, logical_map, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule.global_memory import INDEXING_OPS as INDEXING_OPS
from engine.schedule.global_memory import global_only, read_by_resize, runtime_buffers
from engine.schedule.global_memory import layout_op_buffer_reason as layout_op_buffer_reason
from engine.schedule.global_memory import lookup_inputs as lookup_inputs
from engine.schedule.global_memory import memory_promotion_reason as memory_promotion_reason
from engine.schedule.propagate import inline_all_at as _inline_all_at
from engine.schedule.propagate import inline_most as _inline_most
from engine.schedule.propagate import parallelize_like as _parallelize_like
from engine.schedule.propagate import propagate_max_info as _propagate_max_info
from engine.schedule.propagate import transform_like as _transform_like
from engine.schedule.self_mapping import exact_self_mapping_reason as exact_self_mapping_reason
from engine.schedule.self_mapping import has_reshape_history as has_reshape_history
from engine.schedule.self_mapping import self_mapping_reason as self_mapping_reason
from engine.trace import Trace

# A predicate that says a tensor must not be cached or forked. Schedulers may pass
# their own (e.g. resize keeps inputs read by a pad); the global-only tensors
# (global_memory.global_only) are kept whatever they pass.
Keep = Callable[[TensorView], bool]


def _never(_: TensorView) -> bool:
    return False


# ---- small helpers every scheduler uses ------------------------------------------------------

def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def prev_pow2(n: int) -> int:
    """The largest power of two <= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n.bit_length() - 1)


def has_reduction(fusion: Fusion) -> bool:
    """Whether `fusion` reduces: a reduction or Welford op, or a tensor made in it whose
    logical domain has a reduction axis."""
    return any(isinstance(e, (ex.ReductionOp, ex.WelfordOp)) for e in fusion.exprs()) or any(
        i.is_reduction for t in fusion.tensors() if t not in fusion.inputs for i in t.domain.logical
    )


def note_transform(trace: Trace | None, subject: str, message: str, **data: object) -> None:
    """A "transform" event on `subject` (a tensor's short name, or the scheduler's), when
    there is a trace."""
    if trace is not None:
        trace.event("transform", subject, message, **data)


# ---- which reference axes a tensor has -----------------------------------------------------

def dims_present(ref: TensorView, io: Sequence[TensorView], broadcasts: bool = False,
                 axes: Sequence[IterDomain] | None = None) -> dict[TensorView, set[int]]:
    """For each of `io`, the reference logical positions it has a concrete axis for
    (reached through logical maps without broadcast-to-concrete pairs); with `broadcasts`,
    those it has any axis for, a broadcast of its own logical domain included. `axes`: the
    reference's axes in the order whose positions are meant (default: logical order)."""
    ref_ids = list(axes) if axes is not None else [i for i in ref.domain.logical if not i.is_reduction]
    maps: dict[TensorView, dict[int, IterDomain]] = {
        ref: {k: i for k, i in enumerate(ref_ids) if broadcasts or not i.is_broadcast}}
    queue = [ref]
    while queue:
        src = queue.pop(0)
        for nb in [*consumers_of(src), *producers_of(src)]:
            if nb in maps:
                continue
            if nb in consumers_of(src):
                m = logical_map(src, nb, map_broadcast=broadcasts)
            else:
                m = {c: p for p, c in logical_map(nb, src, map_broadcast=broadcasts).items()}
            maps[nb] = {k: m[i] for k, i in maps[src].items() if i in m and (broadcasts or not m[i].is_broadcast)}
            queue.append(nb)
    return {tv: set(maps.get(tv, {})) for tv in io}


# ---- a check every kernel scheduler applies ----------------------------------------------

def aten_only_reason(fusion: Fusion) -> str | None:
    """Ops that no generated kernel computes (engine.ir.aten_exprs.aten_only): every kernel
    scheduler refuses a fusion holding one, as nvFuser's checkCanSchedule does, so the
    segmenter leaves each to an expr_eval segment of its own."""
    names = sorted({aten_only_name(e) for e in fusion.exprs() if aten_only(e)})
    if names:
        return f"Has unsupported ops: {', '.join(names)} (evaluated by the expr_eval scheduler in this engine)"
    return None


# ---- caching, propagation, inlining -------------------------------------------------------

def global_only_keep(fusion: Fusion) -> Keep:
    """`global_only` as a Keep predicate, computed once from the fusion as it is now
    (before caching adds tensors), so that every scheduler shares one rule."""
    kept = global_only(fusion)
    return lambda tv: tv in kept


def _either(a: Keep, b: Keep) -> Keep:
    return lambda tv: a(tv) or b(tv)


def cache_inputs(fusion: Fusion, keep: Keep = _never, trace: Trace | None = None,
                 unindexable: Mapping[TensorView, str] | None = None,
                 elementwise_of_lookups: bool = False) -> list[TensorView]:
    """`cache_after` every tensor input that has uses; returns the caches.

    `elementwise_of_lookups`: an input that an indexing op looks up (read from global memory
    at positions taken from data) and other ops also read element by element is cached for
    those other uses (nvFuser's cached_uses): a persistent kernel keeps that row in
    registers and loads it vectorized, while the lookup still reads global memory.

    An input that cannot be cached (kept by `keep` or global-only, read by a slice or
    pad, one in `unindexable`, whose cache the scheduler's loops could not index, with
    why, or refused by the primitive, e.g. read by a cat) is read from global memory
    directly; the trace says why, once. Without this a cache of a padded input would keep
    the unpadded loop domain, which transform propagation from the (padded) reference
    cannot reach across the pad's Resize: a whole tensor per thread, never inlined.
    """
    split = lookup_inputs(fusion) - runtime_buffers(fusion) if elementwise_of_lookups else set()
    caller_keep = keep
    keep = _either(global_only_keep(fusion), keep)
    caches = []
    for tv in [v for v in fusion.inputs if isinstance(v, TensorView)]:
        if not fusion.uses_of(tv):
            continue
        if tv in split and not caller_keep(tv):
            cache = _cache_elementwise_uses(fusion, tv, trace)
            if cache is not None:
                caches.append(cache)
            continue
        if keep(tv):
            note_transform(trace, tv.short_name, "input not cached: it must stay in global memory")
            continue
        if read_by_resize(fusion, tv):
            note_transform(trace, tv.short_name, "input not cached: a slice or pad reads it from global memory")
            continue
        if unindexable and tv in unindexable:
            note_transform(trace, tv.short_name, f"input not cached: {unindexable[tv]}")
            continue
        try:
            caches.append(tv.cache_after())
        except ScheduleError as e:
            note_transform(trace, tv.short_name, f"input not cached: {e}")
    return caches


def _cache_elementwise_uses(fusion: Fusion, tv: TensorView, trace: Trace | None) -> TensorView | None:
    """cache_inputs' cache of a looked-up input for its other uses, or None."""
    others = [e for e in fusion.uses_of(tv) if not (isinstance(e, INDEXING_OPS) and e.inputs[0] is tv)]
    if not others or read_by_resize(fusion, tv):
        note_transform(trace, tv.short_name, "input not cached: it must stay in global memory")
        return None
    try:
        cache = tv.cache_after(uses=others)
    except ScheduleError as e:
        note_transform(trace, tv.short_name, f"input not cached: {e}")
        return None
    note_transform(trace, tv.short_name, f"cached as {cache.short_name} for its element-wise uses; "
                   "the indexing op reads it from global memory")
    return cache


def cache_and_fork_outputs(fusion: Fusion, keep: Keep = _never, trace: Trace | None = None) -> list[TensorView]:
    """Give each computed output a local producer: cache_before, or cache_fork when the
    output is also read inside the fusion. Returns the local tensors. Outputs kept by
    `keep` or global-only are written directly by their definition."""
    keep = _either(global_only_keep(fusion), keep)
    caches = []
    for tv in [v for v in fusion.outputs if isinstance(v, TensorView)]:
        if tv.definition is None or tv in fusion.inputs:
            continue
        if keep(tv):
            note_transform(trace, tv.short_name, "output not cached: written directly")
            continue
        try:
            if fusion.uses_of(tv):
                tv.cache_fork()
                caches.append(tv)  # tv itself is now the local value its uses read
            else:
                caches.append(tv.cache_before())
        except ScheduleError as e:
            note_transform(trace, tv.short_name, f"output not cached: {e}")
    return caches


def connected_tensors(tv: TensorView, through_scalars: bool = True) -> set[TensorView]:
    """The tensors joined to `tv` by producer-consumer edges (fusion inputs included): the
    part of the fusion that propagation from `tv` can reach. Without `through_scalars`, a
    tensor with no axis to map (a 0-dim one: a mean's divisor) is reached but not crossed:
    transforms do not propagate through it."""
    seen = {tv}
    stack = [tv]
    while stack:
        t = stack.pop()
        if t is not tv and not through_scalars and not _has_axes(t):
            continue
        for n in [*producers_of(t), *consumers_of(t)]:
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return seen


def _has_axes(tv: TensorView) -> bool:
    return any(not i.is_broadcast for i in tv.domain.logical)


def propagate(reference: TensorView, selected: Sequence[TensorView] | None = None) -> None:
    """Replay the reference's loop transforms onto every (selected) tensor."""
    _transform_like(reference, selected)


def propagate_max_info(reference: TensorView, selected: Sequence[TensorView] | None = None,
                       parallel: bool = True) -> None:
    """Replay the reference's transforms along the tree that carries the most of its axes
    (nvFuser's MaxLogicalDomainInfoSpanningTree); parallel types follow the same tree."""
    _propagate_max_info(reference, list(selected) if selected is not None else None, parallel)


def parallelize_all_like(
    reference: TensorView,
    pos: int = -1,
    selected: Sequence[TensorView] | None = None,
    parallel_types: Iterable[ParallelType] | None = None,
    across_resize: bool = False,
) -> None:
    _parallelize_like(reference, pos, selected, parallel_types, across_resize)


def inline_most(fusion: Fusion, selected: Sequence[TensorView] | None = None) -> None:
    _inline_most(fusion, selected)


def inline_at(reference: TensorView, pos: int = -1, best_effort: bool = True,
              selected: Sequence[TensorView] | None = None) -> None:
    _inline_all_at(reference, pos, best_effort, selected)
