"""Classes of IterDomains across a fusion, as the resize and transpose schedulers ask
about them: a union-find over IterDomains (transpose_groups builds its inner dims on
it), nvFuser's hasNonUniqueBcast (both schedulers refuse such a broadcast) and the
broadcast graph (the resize scheduler refuses a resize of a broadcast)."""

from __future__ import annotations

from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IdTransform, IterDomain, Merge, Split
from engine.ir.logical_map import frozen_fact, pairwise_logical_map, producers_of
from engine.ir.tensorview import TensorView


class UnionFind:
    """IterDomains in classes: `find` gives a class's representative, `union` joins two."""

    def __init__(self) -> None:
        self.parent: dict[IterDomain, IterDomain] = {}

    def find(self, i: IterDomain) -> IterDomain:
        parent = self.parent
        p = parent.setdefault(i, i)
        # Every parent is itself a key (a root when it was linked), so the walk only reads.
        while p is not (q := parent[p]):
            p = q
        parent[i] = p
        return p

    def union(self, a: IterDomain, b: IterDomain) -> None:
        # find(a) and find(b), inline: the checks union every pair of every pairwise map.
        parent = self.parent
        ra = parent.setdefault(a, a)
        while ra is not (q := parent[ra]):
            ra = q
        parent[a] = ra
        rb = parent.setdefault(b, b)
        while rb is not (q := parent[rb]):
            rb = q
        parent[b] = rb
        if ra is not rb:
            parent[rb] = ra


def has_non_unique_broadcast(fusion: Fusion) -> bool:
    """nvFuser's hasNonUniqueBcast: a broadcast axis that meets concrete axes of two
    different sizes (not exact-mapped to each other), so that no single loop can
    stand for it. Exact classes here: producer-consumer maps without broadcast
    pairs; a broadcast class collects the exact classes of the concrete axes its
    members meet across an op. Once per verdict (the resize and transpose schedulers
    both ask)."""
    return frozen_fact(fusion, "non_unique_broadcast", _has_non_unique_broadcast)


def _has_non_unique_broadcast(fusion: Fusion) -> bool:
    exact = UnionFind()
    pairs: list[tuple[IterDomain, IterDomain]] = []
    for tv in fusion.tensors():
        for p in producers_of(tv):
            for a, b in pairwise_logical_map(p, tv, map_broadcast=True).items():
                if a.is_broadcast == b.is_broadcast:
                    exact.union(a, b)
                else:
                    pairs.append((a, b))
    targets: dict[IterDomain, set[IterDomain]] = {}
    for a, b in pairs:
        bc, conc = (a, b) if a.is_broadcast else (b, a)
        targets.setdefault(exact.find(bc), set()).add(exact.find(conc))
    return any(len(t) > 1 for t in targets.values())


def broadcast_groups(fusion: Fusion) -> UnionFind:
    """nvFuser's broadcast graph, reduced: ids mapped across ops, broadcast with concrete."""
    uf = UnionFind()
    for tv in fusion.tensors():
        for p in producers_of(tv):
            for a, b in pairwise_logical_map(p, tv, map_broadcast=True).items():
                uf.union(a, b)
    return uf


def exact_classes(fusion: Fusion) -> UnionFind:
    """nvFuser's exact graph, reduced: ids mapped across ops (broadcast only with broadcast,
    never across a resize), then the outputs of reshapes' splits and merges whose inputs
    are mapped and whose factors are equal (IdModel maps identical exprs the same way)."""
    uf = UnionFind()
    views: list[IdTransform] = []
    for tv in fusion.tensors():
        for p in producers_of(tv):
            for a, b in pairwise_logical_map(p, tv, map_broadcast=False).items():
                uf.union(a, b)
        if tv.domain.root is not None:
            views.extend(_root_to_logical_transforms(tv))
    changed = True
    while changed:
        changed = False
        seen: dict[tuple[object, ...], IdTransform] = {}
        for t in views:
            key = (type(t).__name__, *(uf.find(i) for i in t.inputs),
                   *((t.factor.inline(), t.inner_split) if isinstance(t, Split) else ()))
            other = seen.setdefault(key, t)
            if other is t:
                continue
            for a, b in zip(other.outputs, t.outputs):
                if uf.find(a) is not uf.find(b):
                    uf.union(a, b)
                    changed = True
    return uf


def _root_to_logical_transforms(tv: TensorView) -> list[IdTransform]:
    """The splits and merges between a reshape's root and logical domains."""
    root = set(tv.domain.root or ())
    out: list[IdTransform] = []
    stack = list(tv.domain.logical)
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        d = i.definition
        if i in root or d is None or id(d) in seen or not isinstance(d, (Split, Merge)):
            continue
        seen.add(id(d))
        out.append(d)
        stack.extend(d.inputs)
    return out
