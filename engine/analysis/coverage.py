"""Which axes of a fusion a reference tensor's schedule reaches.

A reduction-based schedule splits and parallelizes its reference reduction and propagates
those transforms along the logical maps of the fusion's ops. An axis of another tensor that
no chain of maps ties to an axis of the reference (a row sum broadcast along a new column
axis: cross entropy's count of valid tokens, scaling a [tokens, vocab] gradient) gets no
split and no thread: every thread runs it whole, in a serial loop over a local buffer as
long as the axis (nvFuser's persistent schedulers refuse such a fusion:
SchedulerTopologyChecker::hasNonNormalizePostReductionBCast).

Axes are grouped by the maps that pair concrete axes (a broadcast axis pairs with nothing:
it has one element, whatever it meets), across a reshape from its root axes to the logical
axes its splits and merges make of them (the schedule is replayed across it). Broadcast
axes and axes of one element need no thread and are never uncovered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.view_interference import view_transforms
from engine.ir.indexing_exprs import INDEXING_OPS
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import pairwise_logical_map, root_to_logical, tensor_edges
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion


class AxisClasses:
    """Union-find over the logical IterDomains of a fusion's tensors, joined by the
    concrete pairs of every op's logical map."""

    def __init__(self, fusion: Fusion) -> None:
        self._parent: dict[IterDomain, IterDomain] = {}
        for p, c, _e in tensor_edges(fusion):
            for a, b in pairwise_logical_map(p, c, map_broadcast=False).items():
                if not a.is_broadcast and not b.is_broadcast:
                    self._join(a, b)
        for tv in fusion.tensors():
            if not isinstance(tv, TensorView) or tv.domain.root is None:
                continue
            for r, lg in root_to_logical(tv).items():
                self._join(r, lg)
            for t in view_transforms(tv):
                ids = [i for i in [*t.inputs, *t.outputs] if not i.is_broadcast]
                for i in ids[1:]:
                    self._join(ids[0], i)

    def find(self, i: IterDomain) -> IterDomain:
        root = i
        while self._parent.get(root, root) is not root:
            root = self._parent[root]
        while i is not root:  # path compression
            self._parent[i], i = root, self._parent[i]
        return root

    def _join(self, a: IterDomain, b: IterDomain) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self._parent[ra] = rb


def _needs_thread(i: IterDomain) -> bool:
    if i.is_broadcast:
        return False
    e = i.expanded_extent if i.expanded_extent is not None else i.extent
    return not (e.is_const and e.evaluate() == 1)


def looked_up_axes(fusion: Fusion) -> set[IterDomain]:
    """Axes of fusion inputs read only by gather-like ops, at their index axis: the kernel
    reads global memory at the indices there and never loops over the axis."""
    out = set()
    for tv in fusion.inputs:
        if not isinstance(tv, TensorView):
            continue
        uses = fusion.uses_of(tv)
        if uses and all(isinstance(e, INDEXING_OPS) and e.inputs[0] is tv for e in uses):
            logical = [i for i in tv.domain.logical if not i.is_reduction]
            out.update(logical[e.dim] for e in uses)
    return out


def uncovered_axis(fusion: Fusion, refs: list[TensorView]) -> tuple[TensorView, IterDomain] | None:
    """A tensor of `fusion` and an axis of it that no logical map ties to an axis of one of
    `refs` (their reduction axes included), or None when they reach every concrete axis. An
    input's axis that gather-like ops only index needs no thread (looked_up_axes)."""
    classes = AxisClasses(fusion)
    reached = {classes.find(i) for r in refs for i in r.domain.logical}
    indexed = looked_up_axes(fusion)
    for tv in fusion.tensors():
        if not isinstance(tv, TensorView):
            continue
        for i in tv.domain.logical:
            if i in indexed:
                continue
            if i.is_reduction and tv not in refs:
                continue  # another reduction's reduced axis maps to its producer's axis
            if _needs_thread(i) and classes.find(i) not in reached:
                return tv, i
    return None
