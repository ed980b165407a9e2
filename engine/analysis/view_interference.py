"""Whether a reshape interferes with a reduction's schedule (nvFuser's
reductionInterferingView).

A reduction schedule merges the reference's axes into at most three groups: the innermost
run of axes of one kind (reduced or not), then the remaining axes of each kind. A reshape
that only splits axes never joins two groups. One that merges (or splits and merges) can:
then the logical ids that the reshapes connect, across every producer and consumer, form
disjoint sets, and the reshape interferes when two of the reference's groups share a set
(the schedule would have to merge a reduced axis with an iterated one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain, Merge
from engine.ir.logical_map import pairwise_logical_map, tensor_edges

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.ir.tensorview import TensorView


def split_only(view: ex.ViewOp) -> bool:
    """Whether the reshape's root->logical transforms are splits only."""
    return not any(isinstance(t, Merge) for t in view_transforms(view.output))


def view_transforms(tv: TensorView) -> list:
    """The transforms between `tv`'s root and logical domains, each once."""
    dom = tv.domain
    if dom.root is None:
        return []
    root = set(dom.root)
    seen: list = []
    stack: list[IterDomain] = list(dom.logical)
    while stack:
        i = stack.pop()
        t = i.definition
        if i in root or t is None or any(t is s for s in seen):
            continue
        seen.append(t)
        stack.extend(t.inputs)
    return seen


def _groups(reference: TensorView) -> list[list[IterDomain]]:
    """The reference's logical axes as a reduction schedule merges them: the innermost run of
    one kind, then the remaining axes of each kind (nvFuser's up to three groups)."""
    dims = list(reference.domain.logical)
    groups: list[list[IterDomain]] = []
    for n in range(3):
        if not dims:
            break
        last = dims[-1].is_reduction
        current: list[IterDomain] = []
        for i in reversed(dims):
            if i.is_reduction != last:
                if n == 0:
                    break
                continue
            current.append(i)
        groups.append(current)
        dims = [i for i in dims if all(i is not c for c in current)]
    return groups


def interfering_view(fusion: Fusion, reference: TensorView) -> ex.ViewOp | None:
    """The first reshape of `fusion` that joins two of `reference`'s schedule groups, or
    None when every reshape only splits or none joins them."""
    views = [e for e in fusion.exprs() if isinstance(e, ex.ViewOp)]
    merging = [v for v in views if not split_only(v)]
    if not merging:
        return None
    parent: dict[int, IterDomain] = {}

    def find(i: IterDomain) -> IterDomain:
        while (p := parent.setdefault(id(i), i)) is not i:
            parent[id(i)] = parent.setdefault(id(p), p)
            i = parent[id(i)]
        return i

    def union(a: IterDomain, b: IterDomain) -> None:
        ra, rb = find(a), find(b)
        if ra is not rb:
            parent[id(ra)] = rb

    for producer, consumer, _ in tensor_edges(fusion):
        for p, c in pairwise_logical_map(producer, consumer, map_broadcast=False).items():
            union(p, c)
    for v in views:
        for t in view_transforms(v.output):
            ids = [*t.inputs, *t.outputs]
            for i in ids[1:]:
                union(ids[0], i)
    sets = [{id(find(i)) for i in g} for g in _groups(reference)]
    shared = {k for a in range(len(sets)) for b in range(a + 1, len(sets)) for k in sets[a] & sets[b]}
    if not shared:
        return None
    return next((v for v in merging for t in view_transforms(v.output)
                 if any(id(find(i)) in shared for i in t.outputs)), merging[0])
