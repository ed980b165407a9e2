"""A fusion's parts that share no tensor.

Ops that share no tensor, not even an input they both read, are scheduled from no common
reference: a schedule propagated from one part's reference never reaches the other's axes
(engine.analysis.coverage). When no scheduler accepts the complete fusion, the segmenter
first tries each such part as a segment of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.base import Expr
from engine.ir.tensorview import TensorView


def components(exprs: Sequence[Expr]) -> list[list[Expr]]:
    """The exprs in groups that share no tensor (an input read by two exprs joins them),
    each in the order given."""
    parent: dict[Expr, Expr] = {}

    def find(e: Expr) -> Expr:
        while parent.get(e, e) is not e:
            e = parent[e]
        return e

    reader: dict[TensorView, Expr] = {}
    for e in exprs:
        for v in [*e.inputs, *e.outputs]:
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
