"""A fusion's parts that share no tensor.

Ops that share no tensor, not even an input they both read, are scheduled from no common
reference: a schedule propagated from one part's reference never reaches the other's axes
(engine.analysis.coverage). When no scheduler accepts the complete fusion, the segmenter
first tries each such part as a segment of its own. A segment_set is a boundary the user (or
a pre-segmentation pass) asked for: `components(exprs, cut_in=...)` does not join the ops it
separates, and `parts_in_order` says whether such parts can run one after another.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import networkx as nx

from engine.ir.base import Expr
from engine.ir.tensorview import TensorView


def components(exprs: Sequence[Expr], cut_in: Collection[Expr] = ()) -> list[list[Expr]]:
    """The exprs in groups that share no tensor (an input read by two exprs joins them),
    each in the order given. An expr of `cut_in` is not joined through its inputs: it goes
    with the exprs that read its outputs."""
    parent: dict[Expr, Expr] = {}

    def find(e: Expr) -> Expr:
        while parent.get(e, e) is not e:
            e = parent[e]
        return e

    reader: dict[TensorView, Expr] = {}
    for e in exprs:
        for v in [*([] if e in cut_in else e.inputs), *e.outputs]:
            if not isinstance(v, TensorView):
                continue
            other = reader.setdefault(v, e)
            a, b = find(e), find(other)
            if a is not b:
                parent[a] = b
    parts: dict[Expr, list[Expr]] = {}
    for e in exprs:
        parts.setdefault(find(e), []).append(e)
    return list(parts.values())


def parts_in_order(parts: Sequence[Sequence[Expr]]) -> bool:
    """Whether the parts, each run whole, depend on each other without a cycle."""
    owner = {o: k for k, p in enumerate(parts) for e in p for o in e.outputs}
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parts)))
    for k, p in enumerate(parts):
        for e in p:
            for v in e.inputs:
                j = owner.get(v)
                if j is not None and j != k:
                    g.add_edge(j, k)
    return nx.is_directed_acyclic_graph(g)
