"""Propagating a schedule across a fusion: replaying loop transforms from tensor to tensor
(breadth-first, or along the tree that carries the most reference axes), copying
parallel types, and inlining. Each runs as one transaction: refused, nothing changes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.errors import ScheduleError
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.tensorview import TensorView, transaction


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
    from engine.ir.iterdomain import Merge

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
    """Replay `reference`'s loop transforms across the fusion (nvFuser's TransformPropagator).

    The spanning tree is breadth-first from the reference over producer and consumer
    edges (consumers first), restricted to `selected` when given; each tensor is
    replayed from the tensor that reached it. nvFuser picks the tree that keeps the
    most logical-domain information; breadth-first gives the same result on the
    pointwise, reduction and broadcast chains this engine schedules. Tensors reached
    must not be inlined yet (transform, then inline).
    """
    fusion = reference.fusion
    allowed = None if selected is None else {*selected, reference}
    with transaction(fusion.tensors()):  # type: ignore[arg-type]
        seen = {reference}
        queue = [reference]
        while queue:
            src = queue.pop(0)
            for nb in _neighbours(src):
                if nb in seen or (allowed is not None and nb not in allowed):
                    continue
                seen.add(nb)
                nb._require_not_inlined("transform_like")
                replay_edge(src, nb)
                queue.append(nb)


def parallelize_like(
    reference: TensorView,
    pos: int = -1,
    selected: Sequence[TensorView] | None = None,
    parallel_types: Iterable[ParallelType] | None = None,
) -> None:
    """Copy the parallel types of `reference`'s first `pos` loop ids (all when -1) to the
    loop ids that map to them, composed edge by edge over the whole fusion, in the
    `selected` tensors (all others when None). Serial is copied only when asked for."""
    from engine.analysis.logical_map import consumers_of
    from engine.analysis.replay import loop_map

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
                lm = loop_map(src, nb)
            else:
                lm = {c: q for q, c in loop_map(nb, src).items()}
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
    """Inline every (selected) non-input tensor at its largest legal position."""
    from engine.analysis.replay import loop_maps_frozen

    targets = [t for t in (selected if selected is not None else fusion.tensors())
               if t not in fusion.inputs]
    # Inlining sets positions only, never a loop domain: each tensor's legal position and
    # the verification after ask for the same loop maps, computed once.
    with loop_maps_frozen(), transaction(fusion.tensors(), inlining=True):  # type: ignore[arg-type]
        for tv in targets:
            tv.inline_at(-1, best_effort=True)  # type: ignore[union-attr]


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
                       parallel: bool = True) -> None:
    """Replay the reference's loop transforms onto every (selected) tensor, each tensor
    from the neighbour that carries the most of the reference's axes to it.

    transform_like walks breadth-first, so a tensor reached first through a
    broadcast (seed 001's T4 = T0 + broadcast(sum(T0))) would get only the axis the
    broadcast carries and keep its other axes unsplit. Like nvFuser's
    MaxLogicalDomainInfoSpanningTree, this grows a tree that always takes the edge
    carrying the most non-broadcast reference-derived logical ids (Prim's algorithm,
    ties in discovery order). With `parallel`, parallel types follow the same tree
    (parallelize_like walks breadth-first and would miss the same axes).
    """
    from engine.analysis.logical_map import consumers_of, logical_map, producers_of
    from engine.analysis.replay import loop_map

    fusion = reference.fusion
    allowed = None if selected is None else {*selected, reference}
    info: dict[TensorView, set] = {
        reference: {i for i in reference.domain.logical if not i.is_broadcast}}
    with transaction(fusion.tensors()):  # type: ignore[arg-type]
        while True:
            best: tuple[int, int, TensorView, TensorView, set] | None = None
            order = 0
            for src in list(info):
                for dst in [*consumers_of(src), *producers_of(src)]:
                    if dst in info or (allowed is not None and dst not in allowed):
                        continue
                    if dst in consumers_of(src):
                        m = logical_map(src, dst)
                    else:
                        m = {c: q for q, c in logical_map(dst, src).items()}
                    carried = {m[i] for i in info[src] if i in m and not m[i].is_broadcast}
                    order += 1
                    if best is None or len(carried) > best[0]:
                        best = (len(carried), order, src, dst, carried)
            if best is None:
                return
            _, _, src, dst, carried = best
            dst._require_not_inlined("propagate")
            replay_edge(src, dst)
            info[dst] = carried
            if parallel:
                if dst in consumers_of(src):
                    lm = loop_map(src, dst)
                else:
                    lm = {c: q for q, c in loop_map(dst, src).items()}
                for i in src.domain.loop:
                    d = lm.get(i)
                    if i.is_parallelized and d is not None and d in dst.domain.loop:
                        d.parallelize(i.parallel_type)
