"""Propagating a schedule across a fusion: replaying loop transforms from tensor to tensor
(breadth-first, or along the tree that carries the most reference axes), copying
parallel types, and inlining. Each runs as one transaction: refused, nothing changes.

This module replays transforms and copies parallel types; the inlining is in
inline_fusion (inline_most, inline_all_at), with inline_broadcasts for producers
inlined past their consumers' broadcast axes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.errors import ScheduleError
from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.logical_map import consumers_of, logical_map, producers_of
from engine.ir.loop_map import loop_map, loop_map_across_resize
from engine.ir.tensorview import TensorView, transaction
from engine.ir.transform_replay import replay_edge
from engine.schedule.inline_fusion import inline_all_at, inline_most, persistent_caps

__all__ = [
    "inline_all_at", "inline_most", "parallelize_like", "persistent_caps", "propagate_max_info",
    "replay_edge", "transform_like",
]


def _neighbours(tv: TensorView) -> list[TensorView]:
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


def _placed_broadcasts(tv: TensorView, mapped: set[IterDomain]) -> int:
    """`tv`'s mapped broadcast logical ids left of its last non-broadcast one."""
    logical = tv.domain.logical
    k = len(logical)
    while k and logical[k - 1].is_broadcast:
        k -= 1
    return sum(1 for i in logical[:k] if i.is_broadcast and i in mapped)


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

    fusion = reference.fusion
    allowed = None if selected is None else {*selected, reference}
    # The reference's broadcast axes count once they reach a real axis (a split of mean's
    # keepdim axis reaches the rows through x - mean, not through the reduction's broadcast).
    info: dict[TensorView, set] = {reference: set(reference.domain.logical)}
    # The edges out of each tree tensor with the ids each would carry, found once when the
    # tensor joins the tree: replaying an edge changes loop domains only, never the graph,
    # a logical or root domain, or a tree tensor's info (mapping every edge of the tree
    # again each round would be quadratic in the tensors).
    edges: dict[TensorView, list[tuple[TensorView, bool, set, int]]] = {}

    def out_edges(src: TensorView) -> list[tuple[TensorView, bool, set, int]]:
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
                # Second key: dst's broadcast axes the edge maps that an edge without them
                # would misplace. A broadcast made from a 2-D cache ([N, H] -> [1, N, H])
                # carries as much from its producer as from its consumer; from the producer
                # its new leading axis is appended after the inner axes (nothing to replay it
                # from), from the consumer it goes where the reference has it. Trailing
                # broadcasts ([N, 1]) are appended where they already are.
                found.append((dst, is_consumer, {m[i] for i in info[src] if i in m and not m[i].is_broadcast},
                              _placed_broadcasts(dst, set(m.values()))))
        return found

    with transaction(fusion.tensors()):  # type: ignore[arg-type]
        while True:
            best: tuple[tuple[int, int], TensorView, TensorView, bool, set] | None = None
            for src in list(info):
                for dst, is_consumer, carried, mapped in out_edges(src):
                    # The first edge (in tree order, then neighbour order) carrying the most.
                    if dst not in info and (best is None or (len(carried), mapped) > best[0]):
                        best = ((len(carried), mapped), src, dst, is_consumer, carried)
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
