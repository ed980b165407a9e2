"""Regions of a fusion between the ops no generated kernel computes.

ATen ops (matmul, linear, attention, scans, ...) run as expr_eval segments of their own, and
a reshape or a slice of a fusion input is a view of its buffer. nvFuser cuts its fusion at such ops
(segment_set after MarkAliasesPrepare, expr_eval for ATen ops) and then tries each piece
whole. The segmenter does the same before merging pairwise: a pairwise walk can stall where
only the whole piece is schedulable (a persistent normalization needs its reduction and
every consumer of the persistent buffer at once; half of them is no kernel at all).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

import networkx as nx

from engine.ir import exprs as ex
from engine.ir.aten_exprs import aten_only
from engine.ir.base import Expr

G = TypeVar("G", bound=Hashable)


def is_cut_point(e: Expr, fusion_inputs: Iterable[object]) -> bool:
    """An op that bounds a region: one no kernel computes, or a view of a fusion input (a
    reshape, or a slice with positive constant steps: a window of the input's buffer, as
    engine.schedule.expr_eval runs it)."""
    if aten_only(e):
        return True
    if not isinstance(e, (ex.ViewOp, ex.SliceOp)) or e.inputs[0] not in set(fusion_inputs):
        return False
    return isinstance(e, ex.ViewOp) or all(step.is_const and int(step.value) >= 1 for _, _, step in e.ranges)


def regions(groups: Sequence[G], edges: Iterable[tuple[G, G]], cut: Callable[[G], bool]) -> list[list[G]]:
    """The connected pieces (two groups or more) of `groups` once the `cut` groups are taken
    out, each in the order of `groups`."""
    graph: nx.Graph = nx.Graph()
    graph.add_nodes_from(g for g in groups if not cut(g))
    graph.add_edges_from((a, b) for a, b in edges if a in graph and b in graph)
    order = {g: k for k, g in enumerate(groups)}
    pieces = [sorted(c, key=order.__getitem__) for c in nx.connected_components(graph) if len(c) > 1]
    return sorted(pieces, key=lambda c: order[c[0]])
