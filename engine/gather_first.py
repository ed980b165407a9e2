"""take_along_axis taken before the elementwise ops that make its table (a rewrite of the
clone compile_fusion segments, after engine.concretize.index_before_cast).

take_along_axis(f(a, b), index, d), with f elementwise and b broadcast along d, is
f(take_along_axis(a, index, d), b): the same ops on the same values, for the looked-up
elements only. A cross entropy looks up each row's label in its log-softmax,
(x - max) - log(sum(exp(x - max))): taken as written, the [tokens, vocab] log-softmax in
float is written to global memory between the kernel of its reductions and the kernel of
the look-up (nvFuser writes it so), though only one element a row is read. Taken first, the
look-up reads one logit a row from the input, the row's max and log-sum-exp are applied to
it alone, and the log-softmax is not made at all unless something else reads it.

The rewrite follows the table's definition through unary, binary and ternary ops and plain
sets while every operand is either broadcast along d (used as it is) or has the table's
shape (looked up in turn), and is made only when every look-up then reads a fusion input
(not a reduction's result, a random number op's or a reshape's, which a kernel would then
compute at data-dependent positions).
"""

from __future__ import annotations

from engine.dtypes import DataType
from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorDomain, TensorView
from engine.trace import Trace

_ELEMENTWISE = (ex.UnaryOp, ex.BinaryOp, ex.TernaryOp)


def _axes(tv: TensorView) -> list[IterDomain]:
    return [i for i in tv.domain.logical if not i.is_reduction]


def _pushable(fusion: Fusion, table: TensorView, d: int) -> bool:
    """Whether the look-up along `d` can be taken before `table`'s definition."""
    e = table.definition
    if table in fusion.inputs or e is None:
        return False
    if not (isinstance(e, _ELEMENTWISE) or (isinstance(e, ex.LoadStoreOp) and e.kind == "Set"
                                            and not e.is_permute)):
        return False
    shape = _axes(table)
    for v in e.inputs:
        if isinstance(v, Scalar):
            continue
        if not isinstance(v, TensorView) or len(_axes(v)) != len(shape):
            return False
        if _broadcast_along(v, d):
            if _unexpanded(v, d) is None:
                return False
            continue
        if any(i.is_broadcast != j.is_broadcast for k, (i, j) in enumerate(zip(_axes(v), shape)) if k != d):
            return False
    return True


def _broadcast_along(v: TensorView, d: int) -> bool:
    return _axes(v)[d].is_broadcast


def _unexpanded(v: TensorView, d: int) -> TensorView | None:
    """`v`, broadcast along `d`, as an operand of the looked-up elements: itself when that
    axis has one element, the tensor it expands when it is expanded along `d` (a row's
    max broadcast to [rows, vocab]), else None."""
    if _axes(v)[d].expanded_extent is None:
        return v
    e = v.definition
    if isinstance(e, ex.ExpandOp) and isinstance(e.input, TensorView):
        src = e.input
        if len(_axes(src)) == len(_axes(v)) and _axes(src)[d].is_broadcast \
                and _axes(src)[d].expanded_extent is None:
            return src
    return None


def _reaches_inputs(fusion: Fusion, table: TensorView, d: int) -> bool:
    """Whether taking the look-up first ends at fusion inputs only: then each look-up reads a
    buffer in global memory. One that would end at a computed tensor (a reshape of a slice)
    would have its kernel compute that table for data-dependent elements; it is left as it is."""
    if table in fusion.inputs:
        return True
    if not _pushable(fusion, table, d):
        return False
    return all(_reaches_inputs(fusion, v, d) for v in table.definition.inputs
               if isinstance(v, TensorView) and not _broadcast_along(v, d))


def _fresh_like(fusion: Fusion, out: TensorView, dtype: DataType) -> TensorView:
    return TensorView(fusion, TensorDomain([
        IterDomain(fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
        for i in _axes(out)]), dtype)


def _push(fusion: Fusion, g: ex.GatherOp) -> int:
    """Take the look-up `g` before its table's definition, recursively; the number of ops it
    was taken before."""
    table, index = g.inputs
    d = g.dim
    if not isinstance(table, TensorView) or not _pushable(fusion, table, d):
        return 0
    e = table.definition
    out = g.output
    operands: list = []
    looked_up: list[ex.GatherOp] = []
    for v in e.inputs:
        if isinstance(v, Scalar):
            operands.append(v)
            continue
        if _broadcast_along(v, d):
            operands.append(_unexpanded(v, d))
            continue
        picked = _fresh_like(fusion, out, v.dtype)
        looked_up.append(ex.GatherOp(fusion, picked, v, d, index, exact_sizes=True))
        operands.append(picked)
    fusion.remove_expr(g)
    clone = object.__new__(type(e))
    clone.fusion, clone.inputs, clone.outputs = fusion, operands, [out]
    clone.attributes = dict(e.attributes)
    clone.name = fusion.register_expr(clone)
    return 1 + sum(_push(fusion, h) for h in looked_up)


def gathers_first(fusion: Fusion, trace: Trace | None = None) -> None:
    """Take each take_along_axis of `fusion` before the elementwise ops making its table."""
    for g in [e for e in fusion.exprs() if isinstance(e, ex.GatherOp) and e.exact_sizes]:
        table = g.inputs[0]
        if not isinstance(table, TensorView) or not _reaches_inputs(fusion, table, g.dim):
            continue
        n = _push(fusion, g)
        if n and trace is not None:
            trace.event("concretize", g.output.short_name,
                        f"take_along_axis of {table.short_name} taken before the {n} elementwise "
                        f"ops making it: {g.output.short_name} is computed from the looked-up "
                        "elements only", rule="gathers_first", ops=n)
