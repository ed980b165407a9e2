"""Inlining a fusion's tensors past their consumers' broadcast axes.

Where a consumer's loop domain has broadcast axes that a producer lacks, loops paired by
position stop at the first of them. `inline_aligned` plans loop-only broadcasts for such
producers (TensorView.broadcast_loop), inserts them and inlines; `inline_targets` inlines
without them.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import ScheduleError
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Merge, transforms_between
from engine.ir.logical_map import consumers_of, logical_map
from engine.ir.loop_map import loop_map, loop_maps_frozen
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorView, transaction, transactions_roll_back
from engine.ir.verify import _NOT_INLINABLE


def inline_targets(fusion: Fusion, targets: Sequence[TensorView], caps: dict[TensorView, int]) -> None:
    # Inlining sets positions only, never a loop domain: each tensor's legal position and
    # the verification after ask for the same loop maps, computed once.
    with loop_maps_frozen(), transaction(fusion.tensors(), inlining=True):  # type: ignore[arg-type]
        for tv in targets:
            tv.inline_at(caps.get(tv, -1), best_effort=True)


class _UncoveredError(ScheduleError):
    """Loop-only broadcasts that inlining left outside the compute-at position."""

    def __init__(self, tvs: list[TensorView]) -> None:
        super().__init__(", ".join(t.short_name for t in tvs) + ": loop-only broadcasts not inlined")
        self.tvs = tvs


def inline_aligned(fusion: Fusion, targets: Sequence[TensorView], caps: dict[TensorView, int]) -> bool:
    """Insert the loop-only broadcasts that let producers be inlined past their consumers'
    unmatched broadcast axes (_broadcast_plan), then inline; whether it did. A tensor
    whose inserted broadcasts do not all end up inside its compute-at position (a limit
    the plan does not foresee: a reduction read in its loop) keeps its loop domain: the
    whole step is undone and planned again without it (inside verification_deferred,
    where nothing is undone, the trial fails instead). No plan: nothing done."""
    excluded: set[TensorView] = set()
    while True:
        plan = _broadcast_plan(fusion, targets, caps, excluded)
        if not plan:
            return False
        try:
            # The inlining's transaction verifies every tensor once the broadcasts are in.
            with transaction(fusion.tensors(), verified_inside=True):  # type: ignore[arg-type]
                for tv, inserts in plan.items():
                    for k, like in inserts:
                        tv.broadcast_loop(k, like.extent)
                        tv.axis(k).parallelize(like.parallel_type)
                inline_targets(fusion, targets, caps)
                # Each tensor's inserted broadcasts lie left of its last inserted position.
                left = [tv for tv, inserts in plan.items() if inserts[-1][0] >= tv.compute_at_pos]
                if left:
                    raise _UncoveredError(left)
            return True
        except _UncoveredError as e:
            if not transactions_roll_back():
                raise
            excluded.update(e.tvs)


def _broadcast_plan(fusion: Fusion, targets: Sequence[TensorView], caps: dict[TensorView, int],
                    excluded: set[TensorView]) -> dict[TensorView, list[tuple[int, IterDomain]]]:
    """For each target to align: the loop-only broadcasts to insert, as (loop position
    once inserted, the consumer's loop id it stands for), in insertion order.

    Consumers are planned before their producers (reverse definition order) and a
    producer is matched against each consumer's loop as planned. Walking both loops, a
    producer id that the loop map pairs with the consumer's id matches it; a consumer
    broadcast id that nothing maps to (or a planned loop-only one) is skipped, to be
    matched by a broadcast inserted at that point; anything else ends the walk
    (nvFuser's getMatchedLeafPosWithoutReplayCasP skips the same ids). Only broadcasts
    followed by a matched producer axis are inserted, and only where every consumer asks
    for the same ones: a consumer without them would no longer pair by position."""

    wanted = {t for t in targets if t not in excluded}
    # Each tensor's loop as planned: (id, inserted); an inserted entry holds the id it
    # stands for, which the tensor's producers skip as they skip a broadcast.
    planned: dict[TensorView, list[tuple[IterDomain, bool]]] = {}
    plan: dict[TensorView, list[tuple[int, IterDomain]]] = {}
    for expr in reversed(fusion.exprs()):
        outs = [o for o in expr.outputs if isinstance(o, TensorView)]
        for tv in outs:
            inserts = _inserts_for(tv, consumers_of(tv), planned, caps) if (
                tv in wanted and len(outs) == 1 and _may_align(tv)) else []
            row = [(i, False) for i in tv.domain.loop]
            for k, like in inserts:
                row.insert(k, (like, True))
            if inserts:
                plan[tv] = inserts
            planned[tv] = row
    return plan


def _may_align(tv: TensorView) -> bool:
    """A local or shared tensor whose loop has not been inlined anywhere yet: a global
    one is written once per element, and inserting into a loop part of which is shared
    already would move the shared positions."""
    return (tv.memory_type != MemoryType.Global and tv.compute_at_pos == 0
            and tv.max_producer_pos == 0 and tv not in tv.fusion.inputs)


def _inserts_for(tv: TensorView, consumers: list[TensorView],
                 planned: dict[TensorView, list[tuple[IterDomain, bool]]],
                 caps: dict[TensorView, int]) -> list[tuple[int, IterDomain]]:
    """The broadcasts `tv` needs, the same for every consumer, or none (see _broadcast_plan)."""
    if not consumers:
        return []
    wants = [_skipped(tv, c, planned.get(c) or [(i, False) for i in c.domain.loop], caps.get(tv, tv.nloop))
             for c in consumers]
    first = wants[0]
    if not first or any([k for k, _ in w] != [k for k, _ in first] for w in wants[1:]):
        return []
    return first


def _skipped(tv: TensorView, consumer: TensorView, c_loop: list[tuple[IterDomain, bool]],
             cap: int) -> list[tuple[int, IterDomain]]:
    """The consumer's broadcast ids skipped before a matched axis of `tv`, as (position in
    `tv`'s loop once they are inserted, the id); none unless one of the axes matched past
    them is promoted in the consumer (_promoted_ids), or the consumer gets loop-only
    broadcasts of its own (it then runs in promoted loops). Where neither, `tv` computed in its
    own loops before the consumer's gives each thread the elements it reads, as kernels
    did before loop-only broadcasts existed: those stay as they were."""

    # Only a consumer broadcast (or a planned insert) is ever skipped: a loop without one
    # skips nothing, whatever the map says (most loops: scheduled tensors merge their
    # broadcasts away), so neither the map nor the promotions are needed.
    if not any(inserted or c.is_broadcast for c, inserted in c_loop):
        return []
    m = loop_map(tv, consumer)
    image = set(m.values())
    promoted = _promoted_ids(consumer, image)
    skipped: list[tuple[int, IterDomain]] = []
    matched = 0
    # A consumer that gets loop-only broadcasts itself runs in its consumers' promoted loops.
    needed = any(inserted for _, inserted in c_loop)
    i = j = 0
    limit = min(cap, tv.nloop)
    while i < limit and j < len(c_loop):
        p = tv.domain.loop[i]
        if p.is_reduction or p.parallel_type in _NOT_INLINABLE:
            break
        c, inserted = c_loop[j]
        if not inserted and m.get(p) is c:
            i += 1
            matched = len(skipped)
            needed = needed or (matched > 0 and c in promoted)
        elif inserted or (c.is_broadcast and c not in image):
            skipped.append((i + len(skipped), c))
        else:
            break
        j += 1
    kept = skipped[:matched]
    # Broadcasts bound to the grid or the block are no loops: inserting them costs nothing,
    # and `tv` is then computed in the consumer's loops, a slice at a time, rather than
    # whole before them (a weight read by a row's output loop: 8 registers, not the row's).
    free = bool(kept) and all(c.parallel_type.is_block_dim or c.parallel_type.is_thread_dim for _, c in kept)
    return kept if needed or free else []


def _promoted_ids(consumer: TensorView, image: set[IterDomain]) -> set[IterDomain]:
    """The consumer's ids derived from a merge of one of its broadcast ids that the producer
    has no id for (not in `image`) with an axis that is not a broadcast, where that
    broadcast is concretized downstream (_concretized): the loop is promoted to the extent
    the broadcast takes there, so it runs more elements than the producer's id that maps
    to it (x * broadcast(w)[N, C, H] merging C with H: the producer's loop runs C, the
    consumer's C * H)."""
    out: set[IterDomain] = set()
    for t in transforms_between(consumer.domain.maybe_root, consumer.domain.loop):
        ins = t.inputs
        if any(i in out for i in ins) or (
                isinstance(t, Merge) and not all(i.is_broadcast for i in ins)
                and any(i.is_broadcast and i not in image and _concretized(consumer, _logical_of(consumer, i))
                        for i in ins)):
            out.update(t.outputs)
    return out


def _logical_of(tv: TensorView, i: IterDomain) -> IterDomain:
    """The logical id that loop-side id `i` was split from (itself if it is one)."""
    logical = tv.domain.logical
    while i not in logical and i.definition is not None and len(i.definition.inputs) == 1:
        i = i.definition.inputs[0]
    return i


def _concretized(tv: TensorView, b: IterDomain) -> bool:
    """Whether broadcast `b` of `tv` maps, in some tensor downstream, to an axis that runs
    more than one element (an iteration or reduction axis, or an expanded broadcast, of an
    extent not known to be 1)."""

    def more_than_one(s: Scalar) -> bool:
        return not (s.is_const and s.value == 1)

    stack, seen = [(tv, b)], {(tv, b)}
    while stack:
        t, i = stack.pop()
        for c in consumers_of(t):
            j = logical_map(t, c).get(i)
            if j is None or (c, j) in seen:
                continue
            if not j.is_broadcast:
                if more_than_one(j.extent):
                    return True
                continue
            if j.expanded_extent is not None and more_than_one(j.expanded_extent):
                return True
            seen.add((c, j))
            stack.append((c, j))
    return False
