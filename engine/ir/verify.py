"""Invariants of scheduled TensorViews; every scheduling primitive checks them.

verify(tv) checks one tensor:
- the loop domain covers the logical domain exactly once: replaying the transforms
  between them, in order, from the logical ids, each transform finds all its inputs
  still unconsumed and the ids left at the end are exactly the loop ids. This
  rejects a loop id derived from elsewhere (another tensor, a root id that the
  logical domain replaced), a logical id covered twice (split twice) or not at all.
  Broadcast and reduction ids follow the same rule as iteration ids. The one exception
  are the tensor's own loop-only broadcasts (TensorView.broadcast_loop, listed in its
  domain's loop_only): loop ids derived from nothing, which the loop may also have
  transformed or dropped (they hold no element);
- no merge on the path mixes a reduction id with a non-broadcast iteration id, or with
  a broadcast id that iterates more than once (an expansion, a split broadcast's piece);
- the logical domain, when there is a root domain, derives from it the same way
  (reshape, resize and rfactor transforms);
- the allocation domain, when set, covers the logical domain the same way, and its
  contiguity has one entry per allocation id, None exactly for broadcast ids;
- compute-at positions: 0 <= ca_pos <= number of loop ids, no reduction id among the
  first ca_pos loop ids, each of those ids maps (logical map plus matching
  transforms) to the consumer's loop id at the same position, for every consumer, and
  no loop joined by inlining holds a reduction over it and a reader of its result;
  and max_producer_pos is at least every producer's ca_pos.
verify_fusion(fusion) checks every tensor of a fusion.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.dependencies import downstream_tvs
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, transforms_between
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.loop_map import loop_map
from engine.ir.tensorview_base import MemoryType, TensorViewBase

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.ir.tensorview import TensorView


_NOT_INLINABLE = (ParallelType.vectorize, ParallelType.bulk, ParallelType.mma)


def coverage_error(logical: Sequence[IterDomain], target: Sequence[IterDomain],
                   loop_only: Sequence[IterDomain] = ()) -> str | None:
    """Why `target` does not cover `logical` exactly once through transforms, or None.
    `loop_only` ids may be used once too, but need not be covered."""

    if len(set(target)) != len(target):
        dup = next(i for i in target if list(target).count(i) > 1)
        return f"{dup} appears twice"
    start = [*logical, *loop_only] if loop_only else logical
    frontier = set(start)
    for t in transforms_between(start, target):
        for i in t.inputs:
            if i not in frontier:
                return f"{i} (input of {t.kind}) is not derived from the logical domain exactly once"
            frontier.discard(i)
        if isinstance(t, Merge):
            o, n = t.outer, t.inner
            if (o.is_reduction != n.is_reduction) and not (o.is_broadcast or n.is_broadcast):
                return f"merge of {o} and {n} mixes reduction and iteration axes"
            b = o if o.is_broadcast else n if n.is_broadcast else None
            if b is not None and (o.is_reduction or n.is_reduction):
                # The merged reduction would also run over the broadcast's iterations: an
                # expansion's elements are separate outputs, not values to reduce (the sum
                # would count each of them), and the overhang of a split broadcast (bS{2}
                # from bS{1} split by 2) repeats every element (twice the sum). nvFuser
                # refuses any merge of a reduction with a non-reduction axis.
                times = b.expanded_extent if b.expanded_extent is not None else b.extent
                if not (times.is_const and times.evaluate({}) == 1):
                    kind = "an expanded broadcast axis" if b.expanded_extent is not None else (
                        f"a broadcast axis of {times.inline()} iterations")
                    return f"merge of {o} and {n} mixes a reduction axis with {kind}"
        frontier.update(t.outputs)
    tset = set(target)
    extra = [i for i in target if i not in frontier]
    if extra:
        return f"{extra[0]} does not derive from the logical domain"
    optional = set(loop_only)
    missing = sorted((i for i in frontier if i not in tset and i not in optional), key=lambda i: i.name)
    if missing:
        return f"{missing[0]} is derived from the logical domain but not covered"
    return None


def allocation_error(tv: TensorView, ids: Sequence[IterDomain]) -> str | None:
    """Why `ids` is not a valid allocation domain of `tv`, or None.

    An allocation domain covers the logical domain exactly once. A local or shared
    tensor may instead leave out its loop ids left of the compute-at position: those
    loops are shared with its consumers, so only the rest is allocated (seed 001's
    shared-memory cache: allocation (iS120, iS116, bS20, iB22) under ca_pos 2, its
    loop ids 0 and 1 complete the coverage).
    """
    why = coverage_error(tv.domain.logical, ids)
    if why is None or tv.memory_type == MemoryType.Global or tv.compute_at_pos == 0:
        return why
    # Loop-only broadcasts among them hold no element: they are not part of the coverage.
    loop_only = set(tv.domain.loop_only)
    outer = [i for i in tv.domain.loop[: tv.compute_at_pos] if i not in ids and i not in loop_only]
    if coverage_error(tv.domain.logical, [*outer, *ids]) is None:
        return None
    return why


def verify_domains(tv: TensorView) -> None:
    dom = tv.domain
    if dom.root is not None:
        why = coverage_error(dom.root, dom.logical)
        if why is not None:
            raise ScheduleError(f"{tv.short_name}: logical domain is invalid against the root: {why}")
    why = coverage_error(dom.logical, dom.loop, dom.loop_only)
    if why is None:
        why = _loop_only_error(tv)
    if why is not None:
        raise ScheduleError(f"{tv.short_name}: loop domain is invalid: {why}")
    if dom.allocation is not None:
        why = allocation_error(tv, dom.allocation)
        if why is not None:
            raise ScheduleError(f"{tv.short_name}: allocation domain is invalid: {why}")
    alloc = dom.maybe_allocation
    if len(dom.contiguity) != len(alloc):
        raise ScheduleError(
            f"{tv.short_name}: contiguity has {len(dom.contiguity)} entries for "
            f"{len(alloc)} allocation axes"
        )
    for i, c in zip(alloc, dom.contiguity):
        if i.is_broadcast and c is not None:
            raise ScheduleError(f"{tv.short_name}: contiguity of broadcast axis {i} must be n (None)")
        if not i.is_broadcast and not i.is_reduction and c is None:
            raise ScheduleError(f"{tv.short_name}: contiguity of {i} must be true or false")


def _loop_only_error(tv: TensorView) -> str | None:
    """Why `tv`'s loop-only ids are not what broadcast_loop makes, or None: broadcast ids
    derived from nothing, none of them in the root, logical or allocation domain."""
    dom = tv.domain
    if not dom.loop_only:
        return None
    others = {*dom.maybe_root, *dom.logical, *dom.maybe_allocation}
    for i in dom.loop_only:
        if not i.is_broadcast or i.definition is not None or i in others:
            return f"{i} is listed as a loop-only broadcast but is not one"
    return None


class _State(threading.local):
    """Per thread (a compile in a worker thread inlines its own fusion): the largest legal
    inline positions by tensor while only_positions_change holds, else None."""

    legal: dict[TensorView, int] | None = None


_state = _State()


@contextlib.contextmanager
def only_positions_change() -> Iterator[None]:
    """Inside, nothing but compute-at and produce positions changes (inlining). In a fusion
    without reductions a tensor's largest legal position depends on loop domains,
    parallel types and loop maps alone, so it is computed once: inlining asks for it, and
    the verification after asks again. Holds in the calling thread only."""
    outer = _state.legal
    _state.legal = {} if outer is None else outer
    try:
        yield
    finally:
        _state.legal = outer


def max_inline_position(tv: TensorView) -> int:
    """The largest legal compute-at position of `tv` against all its consumers.

    A tensor without consumers (an output) is limited by its own axes only, as in
    nvFuser, where outputs print a ca_pos too.
    """
    legal = _state.legal
    if legal is None or _has_reduction(tv.fusion):
        return _max_inline_position(tv)
    pos = legal.get(tv)
    if pos is None:
        pos = legal[tv] = _max_inline_position(tv)
    return pos


def _max_inline_position(tv: TensorView) -> int:

    if tv in tv.fusion.inputs:
        return 0
    consumers = consumers_of(tv)
    if tv.definition is not None and len(tv.definition.outputs) > 1:
        # Sibling outputs (Welford) would have to move together; not supported.
        return 0
    maps = [(c, loop_map(tv, c)) for c in consumers]
    pos = 0
    for k, i in enumerate(tv.domain.loop):
        # A reduction axis must finish before a consumer reads the result; vectorized,
        # bulk and mma axes are one instruction each and cannot hold a consumer's loop.
        if i.is_reduction or i.parallel_type in _NOT_INLINABLE:
            break
        ok = all(k < c.nloop and m.get(i) is c.domain.loop[k] for c, m in maps)
        if not ok or reduction_read_in_its_loop(tv, k) is not None:
            break
        pos = k + 1
    return pos


def reduction_read_in_its_loop(tv: TensorView, level: int) -> str | None:
    """Why computing `tv` inside its consumers' loop at `level` would put a reduction and
    a reader of its result in one loop (that loop runs the reduction's axis), or None.

    Every tensor joined to `tv` by inlining past `level` shares that loop. A reduction
    there accumulates over it, and its result exists only once the loop has closed; a
    tensor after the reduction in the same loop reads it unfinished (a cached input
    inlined both into a min and into an add of the broadcast min). nvFuser refuses the same mappings (ComputeAtRootDomainMap's
    unmappable reduction domains), so its inline_most stops before them too.
    """

    if not _has_reduction(tv.fusion):
        return None

    def past(t: TensorView) -> bool:
        return t is tv or t.compute_at_pos > level

    group = {tv}
    stack = [tv]
    while stack:
        t = stack.pop()
        outs = t.definition.outputs if t.definition is not None else []
        near = [o for o in outs if isinstance(o, TensorViewBase) and o is not t]
        near += [p for p in producers_of(t) if past(p)]
        near += consumers_of(t) if past(t) else []
        for n in near:
            if n not in group:
                group.add(n)
                stack.append(n)
    for r in sorted(group, key=lambda t: t.name):
        if level >= r.nloop or not r.axis(level).is_reduction:
            continue
        readers = group & downstream_tvs(r)
        if readers:
            d = min(readers, key=lambda t: t.name)
            return (f"{d.short_name} reads the reduction {r.short_name} inside the loop over its "
                    f"reduction axis {r.axis(level)}, before the reduction is complete")
    return None


def _has_reduction(fusion: Fusion) -> bool:
    """Whether any tensor of `fusion` reduces; kept per graph version (inlining asks this
    for every tensor and position, and most fusions have no reduction to walk for)."""
    cached = getattr(fusion, "_has_reduction", None)
    if cached is not None and cached[0] == fusion.version:
        return cached[1]
    found = any(i.is_reduction for t in fusion.tensors() for i in t.domain.logical)
    fusion._has_reduction = (fusion.version, found)
    return found


def verify_compute_at(tv: TensorView) -> None:

    n = tv.nloop
    if not 0 <= tv.compute_at_pos <= n:
        raise ScheduleError(f"{tv.short_name}: ca_pos {tv.compute_at_pos} is outside 0..{n}")
    if tv.compute_at_pos > 0:
        legal = max_inline_position(tv)
        if tv.compute_at_pos > legal:
            raise ScheduleError(
                f"{tv.short_name}: ca_pos {tv.compute_at_pos} is illegal; its loop ids map to "
                f"every consumer's only up to position {legal}"
            )
    need = max((p.compute_at_pos for p in producers_of(tv)), default=0)
    if tv.max_producer_pos < need or tv.max_producer_pos > n:
        raise ScheduleError(
            f"{tv.short_name}: produce_pos {tv.max_producer_pos} does not match its producers' "
            f"ca_pos (max {need}) within {n} loop axes"
        )


def verify(tv: TensorView) -> None:
    """Raise ScheduleError naming `tv` if any invariant above does not hold."""
    verify_domains(tv)
    verify_compute_at(tv)


def verify_fusion(fusion: Fusion) -> None:
    for tv in fusion.tensors():
        verify(tv)  # type: ignore[arg-type]
