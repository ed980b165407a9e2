"""Propagating a schedule across a fusion: replaying loop transforms from tensor to tensor
(breadth-first, or along the tree that carries the most reference axes), copying
parallel types, and inlining. Each runs as one transaction: refused, nothing changes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, transforms_between
from engine.ir.scalar import Scalar
from engine.ir.tensorview import MemoryType, TensorView, transaction, transactions_roll_back
from engine.ir.verify import _NOT_INLINABLE


def replay_edge(src: TensorView, dst: TensorView) -> None:
    """Give `dst` (a direct producer or consumer of `src`) `src`'s loop transforms."""
    from engine.analysis.logical_map import consumers_of, logical_map, pairwise_logical_map
    from engine.analysis.replay import is_reshape_edge, loop_transforms, replay_onto, transforms_between

    if (is_reshape_edge(src, dst) or is_reshape_edge(dst, src)) and _replay_across_reshape(src, dst):
        return
    if dst in consumers_of(src):
        id_map = logical_map(src, dst)
        ts = loop_transforms(src)
    else:
        # From a consumer, start at its root so its root->logical splits (rfactor,
        # reshape) are replayed on the producer too.
        id_map = {c: p for p, c in pairwise_logical_map(dst, src).items()}
        ts = transforms_between(src.domain.maybe_root, src.domain.loop)
    loop, _ = replay_onto(ts, src.domain.loop, id_map, dst.domain.logical,
                          on_transform=dst._follow_allocation)
    dst.domain.loop = loop


def _replay_across_reshape(src: TensorView, dst: TensorView) -> bool:
    """Across a reshape (`dst` is the reshape of `src`, or its input). Where `src`'s loop
    descends from the full merge of its logical ids (engine.analysis.replay.linear_id),
    `dst` merges all of its own logical ids the same way, which iterates the same
    elements in the same order (a reshape keeps the row-major order), and replays what
    `src` did after its full merge. Every tensor of a flattened (1-D) schedule thus gets
    the same loop whichever path propagation takes to it; otherwise a tensor reached
    forward through a reshape would keep its reshaped axes unscheduled (the logical map
    pairs only the axes a reshape keeps), and one reached backward would carry the
    reshape's splits and merges, which a neighbour reached along another path (a reshape
    and its inverse between one input and an output) does not share.

    Returns False, changing nothing, when `src` has no full merge (a tiled or partly
    merged schedule): the caller then replays what the logical map pairs (backward, the
    reshape output's root->logical transforms are replayed onto the input)."""
    from engine.analysis.replay import linear_id, linear_ids, replay_onto, transforms_between

    x = linear_id(src)
    ids = linear_ids(dst)
    if x is None or not ids:
        return False
    y = ids[0]
    for i in ids[1:]:
        m = Merge(y, i)
        dst._follow_allocation(m)
        y = m.out
    rest = [i for i in dst.domain.logical if i not in ids]
    ts = transforms_between([x], src.domain.loop)
    loop, _ = replay_onto(ts, src.domain.loop, {x: y}, [y, *rest],
                          on_transform=dst._follow_allocation)
    dst.domain.loop = loop
    return True


def _neighbours(tv: TensorView) -> list[TensorView]:
    from engine.analysis.logical_map import consumers_of, producers_of

    return [*consumers_of(tv), *producers_of(tv)]


def transform_like(reference: TensorView, selected: Sequence[TensorView] | None = None) -> None:
    """Replay `reference`'s loop transforms across the fusion (nvFuser's TransformPropagator
    over its MaxLogicalDomainInfoSpanningTree): propagate_max_info without parallel types,
    restricted to `selected` when given. Tensors reached must not be inlined yet (transform,
    then inline)."""
    propagate_max_info(reference, list(selected) if selected is not None else None, parallel=False,
                       op="transform_like")


def parallelize_like(
    reference: TensorView,
    pos: int = -1,
    selected: Sequence[TensorView] | None = None,
    parallel_types: Iterable[ParallelType] | None = None,
    across_resize: bool = False,
) -> None:
    """Copy the parallel types of `reference`'s first `pos` loop ids (all when -1) to the
    loop ids that map to them, composed edge by edge over the whole fusion, in the
    `selected` tensors (all others when None). Serial is copied only when asked for.

    `across_resize`: edges also map through a slice or pad that one side's loop lacks
    (loop_map_across_resize), as nvFuser's parallelizeAllLike maps by PERMISSIVE_RESIZE.
    With the plain loop map, a sliced output made the reference leaves the full-size
    output beside it without a single parallel type, and every thread of the grid runs
    its whole loop nest."""
    from engine.analysis.logical_map import consumers_of
    from engine.analysis.replay import loop_map, loop_map_across_resize

    edge_map = loop_map_across_resize if across_resize else loop_map

    n = reference.nloop
    p = n if pos == -1 else (pos + n + 1 if pos < 0 else pos)
    if not 0 <= p <= n:
        raise ScheduleError(f"{reference.short_name}: parallelize_like position {pos} is outside 0..{n}")
    types = None if parallel_types is None else set(parallel_types)
    if types is not None and any(not isinstance(t, ParallelType) for t in types):
        raise ScheduleError(f"parallelize_like: expected ParallelTypes, got {sorted(map(str, types))}")
    fusion = reference.fusion
    maps: dict[TensorView, dict[IterDomain, IterDomain]] = {reference: {r: r for r in reference.domain.loop}}
    queue = [reference]
    while queue:
        src = queue.pop(0)
        for nb in _neighbours(src):
            if nb in maps:
                continue
            if nb in consumers_of(src):
                lm = edge_map(src, nb)
            else:
                lm = {c: q for q, c in edge_map(nb, src).items()}
            maps[nb] = {r: lm[x] for r, x in maps[src].items() if x in lm}
            queue.append(nb)
    targets = [t for t in (selected if selected is not None else fusion.tensors()) if t is not reference]
    with transaction(targets):  # type: ignore[arg-type]
        for tv in targets:
            m = maps.get(tv, {})  # type: ignore[call-overload]
            for r in reference.domain.loop[:p]:
                pt = r.parallel_type
                if (types is None and pt == ParallelType.serial) or (types is not None and pt not in types):
                    continue
                d = m.get(r)
                if d is not None and d in tv.domain.loop:
                    d.parallelize(pt)


def inline_most(fusion: Fusion, selected: Sequence[TensorView] | None = None) -> None:
    """Inline every (selected) non-input tensor at its largest legal position.

    Where a consumer's loop domain has broadcast axes that a producer lacks (w[C] read
    as broadcast(w)[N, C] by x * broadcast(w), whose loop starts with the broadcast N),
    loops paired by position stop at the first of them and the producer would be
    computed outside the consumer's loops, by other threads. The producer gets loop-only
    broadcasts there first (TensorView.broadcast_loop; see _inline_aligned), as nvFuser's
    inlining skips such axes and its loop promotion runs the producer in the consumer's
    loops."""
    targets = [t for t in (selected if selected is not None else fusion.tensors())
               if t not in fusion.inputs]
    caps = persistent_caps(fusion)
    if not _inline_aligned(fusion, targets, caps):  # type: ignore[arg-type]
        _inline_targets(fusion, targets, caps)  # type: ignore[arg-type]


def _inline_targets(fusion: Fusion, targets: Sequence[TensorView], caps: dict[TensorView, int]) -> None:
    from engine.analysis.replay import loop_maps_frozen

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


def _inline_aligned(fusion: Fusion, targets: Sequence[TensorView], caps: dict[TensorView, int]) -> bool:
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
                _inline_targets(fusion, targets, caps)
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
    from engine.analysis.logical_map import consumers_of

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
    from engine.analysis.replay import loop_map

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
    return skipped[:matched] if needed else []


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
    from engine.analysis.logical_map import consumers_of, logical_map

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


def persistent_caps(fusion: Fusion) -> dict[TensorView, int]:
    """Inline positions of persistent buffers: a tensor a reduction reads and that is read
    again once the reduction is done (x in x - mean(x)) cannot share the loops over the axes
    the reduction reduces, which the reduction closes before its result exists (nvFuser's
    unmappable dims). Each is capped before its first loop axis derived from such an axis;
    without the cap inline_most makes the loop nests depend on each other in a cycle."""
    from engine.analysis.persistent import persistent_buffers, upstream_tvs

    if not any(isinstance(e, ex.ReductionOp | ex.WelfordOp) for e in fusion.exprs()):
        return {}
    caps: dict[TensorView, int] = {}
    for red, live in persistent_buffers(fusion).live_across.items():
        cone = upstream_tvs(red) | {red}
        for t in live:
            reduced = _ids_reaching_reduction(t, red, cone)
            pos = next((k for k, i in enumerate(t.domain.loop) if _ancestors(i) & reduced), t.nloop)
            caps[t] = min(caps.get(t, t.nloop), pos)
    return caps


def _ids_reaching_reduction(t: TensorView, red: TensorView, cone: set[TensorView]) -> set[IterDomain]:
    """`t`'s logical ids that map to an axis `red` reduces, along consumers inside `cone`."""
    from engine.analysis.logical_map import consumers_of, pairwise_logical_map, root_to_logical

    # origins[tv][i]: the ids of t that tv's id i comes from, over every path seen so far
    # (logical ids; the reduction's root ids, which an rfactor may have split).
    origins: dict[TensorView, dict[IterDomain, set[IterDomain]]] = {t: {i: {i} for i in t.domain.logical}}
    queue = [t]
    while queue:
        tv = queue.pop()
        for c in consumers_of(tv):
            if c not in cone:
                continue
            m = pairwise_logical_map(tv, c)
            if c is not red:
                r2l = root_to_logical(c)
                m = {p: r2l[q] for p, q in m.items() if q in r2l}
            got = origins.setdefault(c, {})
            grew = False
            for i, o in origins[tv].items():
                if i in m and not o <= got.get(m[i], set()):
                    got[m[i]] = got.get(m[i], set()) | o
                    grew = True
            if grew:
                queue.append(c)
    return {o for i, os in origins.get(red, {}).items() if i.is_reduction for o in os}


def _ancestors(i: IterDomain) -> set[IterDomain]:
    seen = {i}
    stack = [i]
    while stack:
        d = stack.pop().definition
        for x in (d.inputs if d is not None else []):
            if x not in seen:
                seen.add(x)
                stack.append(x)
    return seen


def inline_all_at(reference: TensorView, pos: int = -1, best_effort: bool = False,
                  selected: Sequence[TensorView] | None = None) -> None:
    """Inline the (selected) tensors at `reference`'s position `pos`.

    Positions are taken index for index: tensors scheduled with transform_like share
    the reference's loop order (mapped axes first), so position k means the same loops
    in each. A tensor with fewer loop axes, or whose legal position is lower, lowers
    the position with best_effort and is refused otherwise.
    """
    from engine.analysis.replay import loop_maps_frozen

    n = reference.nloop
    p = pos + n + 1 if pos < 0 else pos
    if not 0 <= p <= n:
        raise ScheduleError(f"{reference.short_name}: inline position {pos} is outside 0..{n}")
    fusion = reference.fusion
    targets = [t for t in (selected if selected is not None else fusion.tensors())
               if t not in fusion.inputs]
    with loop_maps_frozen(), transaction(fusion.tensors(), inlining=True):  # type: ignore[arg-type]
        for tv in targets:
            q = min(p, tv.nloop) if best_effort else p  # type: ignore[union-attr]
            tv.inline_at(q, best_effort)  # type: ignore[union-attr]


def propagate_max_info(reference: TensorView, selected: list[TensorView] | None = None,
                       parallel: bool = True, op: str = "propagate") -> None:
    """Replay the reference's loop transforms onto every (selected) tensor, each tensor
    from the neighbour that carries the most of the reference's axes to it.

    A breadth-first walk would reach a tensor first through a broadcast (seed 001's
    T4 = T0 + broadcast(sum(T0))) and give it only the axis the broadcast carries,
    leaving its other axes unsplit. Like nvFuser's
    MaxLogicalDomainInfoSpanningTree, this grows a tree that always takes the edge
    carrying the most non-broadcast reference-derived logical ids (Prim's algorithm,
    ties in discovery order). With `parallel`, parallel types follow the same tree
    (parallelize_like walks breadth-first and would miss the same axes).
    """
    from engine.analysis.logical_map import consumers_of, logical_map, producers_of
    from engine.analysis.replay import loop_map

    fusion = reference.fusion
    allowed = None if selected is None else {*selected, reference}
    # The reference's broadcast axes count once they reach a real axis (a split of mean's
    # keepdim axis reaches the rows through x - mean, not through the reduction's broadcast).
    info: dict[TensorView, set] = {reference: set(reference.domain.logical)}
    # The edges out of each tree tensor with the ids each would carry, found once when the
    # tensor joins the tree: replaying an edge changes loop domains only, never the graph,
    # a logical or root domain, or a tree tensor's info (mapping every edge of the tree
    # again each round would be quadratic in the tensors).
    edges: dict[TensorView, list[tuple[TensorView, bool, set]]] = {}

    def out_edges(src: TensorView) -> list[tuple[TensorView, bool, set]]:
        found = edges.get(src)
        if found is None:
            found = edges[src] = []
            consumers = consumers_of(src)
            for dst in [*consumers, *producers_of(src)]:
                if allowed is not None and dst not in allowed:
                    continue
                is_consumer = dst in consumers
                if is_consumer:
                    m = logical_map(src, dst)
                else:
                    m = {c: q for q, c in logical_map(dst, src).items()}
                found.append((dst, is_consumer, {m[i] for i in info[src] if i in m and not m[i].is_broadcast}))
        return found

    with transaction(fusion.tensors()):  # type: ignore[arg-type]
        while True:
            best: tuple[int, TensorView, TensorView, bool, set] | None = None
            for src in list(info):
                for dst, is_consumer, carried in out_edges(src):
                    # The first edge (in tree order, then neighbour order) carrying the most.
                    if dst not in info and (best is None or len(carried) > best[0]):
                        best = (len(carried), src, dst, is_consumer, carried)
            if best is None:
                return
            _, src, dst, is_consumer, carried = best
            dst._require_not_inlined(op)
            replay_edge(src, dst)
            info[dst] = carried
            if parallel:
                if is_consumer:
                    lm = loop_map(src, dst)
                else:
                    lm = {c: q for q, c in loop_map(dst, src).items()}
                for i in src.domain.loop:
                    d = lm.get(i)
                    if i.is_parallelized and d is not None and d in dst.domain.loop:
                        d.parallelize(i.parallel_type)
