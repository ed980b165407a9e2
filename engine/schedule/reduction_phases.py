"""Keeping what a reduction reads apart from what reads its result, past the iteration axes.

Right of the first `n_iter` loops (the rows), each reduction runs a loop of its own that
closes before its result is read. A tensor inlined past `n_iter` shares those loops with
all of its consumers, so it joins them into one loop nest; when one such nest holds a
tensor a reduction is computed from and one computed from that reduction's result, the
nest would have to run both before and after the reduction (the lowering refuses it as
a dependence cycle). Some tensors of the nest are then inlined at the iteration axes only:
each is computed into a per-thread array of its own loop nest and read from there, which
is what nvFuser calls a persistent buffer.

Which tensors: the cheapest set whose capping splits the nest (a minimum cut, networkx).
RMS-norm backward shows why it matters: the broadcast 1/rms joins the outer reduction's
operand (read before the second row sum) with grad_input (read after it). Capping the
broadcast costs one register; capping the grad_out cast on the other side would keep a
float array of the row's elements alive across the block reduction.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import networkx as nx

from engine.analysis.persistent import sibling_tvs
from engine.errors import ScheduleError
from engine.ir.dependencies import downstream_tvs, upstream_tvs
from engine.ir.logical_map import consumers_of
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


def separate_reduction_phases(fusion: Fusion, reds: list[TensorView], n_iter: int,
                              trace: Trace | None) -> list[TensorView]:
    """Lower the inlining of the fewest per-thread elements so that no loop nest right of
    `n_iter` holds both a tensor a reduction of `reds` reads and one read after it.
    Returns the tensors whose inlining it lowered."""
    changed: list[TensorView] = []
    phases = []
    for red in reds:
        sibs = set(sibling_tvs(red))
        after: set[TensorView] = set()
        for x in sibs:
            after |= downstream_tvs(x)
        phases.append((upstream_tvs(red) - set(fusion.inputs), after - sibs))
    while True:
        nest = nests_past(fusion, n_iter)
        split = next(((up, after) for up, after in phases
                      if {nest[t] for t in up} & {nest[t] for t in after}), None)
        if split is None:
            return changed
        up, after = split
        mixed = {nest[t] for t in up} & {nest[t] for t in after}
        members = [t for t in fusion.tensors() if nest[t] in mixed]
        glue = [t for t in cheapest_cut(members, up, after, n_iter) if t.compute_at_pos > n_iter]
        if not glue:  # every tensor of the nest is already at the iteration axes
            names = ", ".join(sorted(t.short_name for t in members))
            raise ScheduleError(f"the loop nest of {names} reads both before and after a reduction, "
                                "and no inlining at the iteration axes parts it")
        for t in glue:
            t.inline_at(min(n_iter, t.nloop), best_effort=True)
            changed.append(t)
            if trace is not None:
                trace.event("transform", t.short_name,
                            f"inlined at {t.compute_at_pos} (iteration axes only): a per-thread array "
                            f"of {_elements(t, n_iter)} element(s) parting the loop nest read before "
                            "a reduction from the one read after it (the cheapest such tensor)")


def nests_past(fusion: Fusion, n_iter: int) -> dict[TensorView, TensorView]:
    """Each tensor's loop nest right of the first `n_iter` loops, named by one of its
    tensors: a tensor inlined past `n_iter` shares it with its consumers."""
    parent: dict[TensorView, TensorView] = {}

    def find(t: TensorView) -> TensorView:
        while parent.get(t, t) is not t:
            t = parent[t]
        return t

    for t in fusion.tensors():
        if t in fusion.inputs or t.compute_at_pos <= n_iter:
            continue
        for c in consumers_of(t):
            a, b = find(t), find(c)
            if a is not b:
                parent[a] = b
    return {t: find(t) for t in fusion.tensors()}


def cheapest_cut(members: list[TensorView], up: set[TensorView], after: set[TensorView],
                 n_iter: int) -> list[TensorView]:
    """The tensors of one loop nest to inline at the iteration axes, so that no tensor of
    `up` shares the nest with one of `after` any more, at the least per-thread elements.

    A tensor inlined past `n_iter` joins itself and all its consumers at once, so each is
    a hyperedge of the nest; the cheapest hyperedge cut separating `up` from `after` is a
    minimum s-t cut after Lawler's reduction (each hyperedge a pair of nodes joined by an
    arc of its cost; arcs of infinite capacity to and from its members). A consumer left
    on the side before the reduction keeps its producers there too (an infinite arc from
    consumer to producer), or the two nests would each wait for the other. Ties go to the
    tensor defined first, as the order of the fusion breaks them."""
    g = nx.DiGraph()
    g.add_node("s")
    g.add_node("t")
    inside = set(members)
    for k, t in enumerate(members):
        if t in up:
            g.add_edge("s", ("v", t))
        if t in after:
            g.add_edge(("v", t), "t")
        # A tensor on the side run before the reduction cannot read one run after it: the
        # nests would wait on each other (an infinite arc, consumer to producer).
        for c in consumers_of(t):
            if c in inside:
                g.add_edge(("v", c), ("v", t))
        if t.compute_at_pos <= n_iter:
            continue
        # a tie breaker far below one element: the earlier tensor is cut first
        cost = _elements(t, n_iter) + k / (len(members) + 1) / 2
        g.add_edge(("in", t), ("out", t), capacity=cost)
        for m in [t, *(c for c in consumers_of(t) if c in inside)]:
            g.add_edge(("v", m), ("in", t))
            g.add_edge(("out", t), ("v", m))
    _, (reach, _) = nx.minimum_cut(g, "s", "t")
    return [t for t in members if t.compute_at_pos > n_iter
            and ("in", t) in reach and ("out", t) not in reach]


def _elements(t: TensorView, n_iter: int) -> int:
    """Per-thread elements of `t` right of `n_iter` (32-bit words): what keeping it costs."""
    n = 1
    for i in t.domain.loop[n_iter:]:
        if i.is_broadcast or i.is_reduction or i.parallel_type.is_thread_dim or i.parallel_type.is_block_dim:
            continue
        try:
            n *= max(1, int(i.extent.evaluate({})))
        except KeyError:  # an extent bound only at run time: a long serial loop
            n *= 1024
    return n * max(1, math.ceil(t.dtype.bits / 32))
