"""Persistent buffers projected to the fusion inputs (nvFuser's projectPersistentBuffers).

A buffer that can be recomputed from inputs through pointwise ops is projected when that is
smaller (a bf16 input instead of its float cast): its uses after the reduction read a copy
recomputed from the inputs by the same ops, and the inputs are what stays persistent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import PersistentBufferInfo, downstream_tvs, sibling_tvs
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.ir.tensorview import MemoryType, TensorDomain, TensorView

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


def _copy_tv(tv: TensorView) -> TensorView:
    ids = [IterDomain(tv.fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
           for i in tv.domain.logical if not i.is_reduction]
    return TensorView(tv.fusion, TensorDomain(ids), tv.dtype, MemoryType.Local)


def _clone_expr(expr: ex.Expr, inputs: list, outputs: list) -> ex.Expr:
    """The same op (class and attributes) between new values."""
    e = object.__new__(type(expr))
    e.fusion = expr.fusion
    e.inputs = list(inputs)
    e.outputs = list(outputs)
    e.attributes = dict(expr.attributes)
    e.name = expr.fusion.register_expr(e)
    return e


def _recompute(fusion: Fusion, t: TensorView, memo: dict[TensorView, TensorView]) -> TensorView:
    """A copy of `t` computed again from the fusion inputs by the same pointwise ops."""
    if t in fusion.inputs:
        return t
    if t in memo:
        return memo[t]
    e = t.definition
    assert e is not None
    ins = [_recompute(fusion, v, memo) if isinstance(v, TensorView) else v for v in e.inputs]
    out = _copy_tv(t)
    _clone_expr(e, ins, [out])
    memo[t] = out
    return out


def project_to_inputs(fusion: Fusion, pb: PersistentBufferInfo, trace: Trace | None) -> list[TensorView]:
    """Make the uses of each projectable buffer after its reduction read a copy
    recomputed from the inputs, so that only the inputs stay persistent (nvFuser's
    projectPersistentBuffers). Returns the recomputed copies."""
    made: list[TensorView] = []
    for buf, _ins in pb.projectable.items():
        after: set[TensorView] = set()
        for red, live in pb.live_across.items():
            if buf in live:
                for s in sibling_tvs(red):
                    after |= downstream_tvs(s)
        uses = [e for e in fusion.uses_of(buf)
                if any(isinstance(o, TensorView) and o in after for o in e.outputs)]
        if not uses:
            continue
        copy = _recompute(fusion, buf, {})
        for e in uses:
            fusion.replace_input_of(e, buf, copy)
        made.append(copy)
        if trace is not None:
            trace.event("transform", buf.short_name,
                        f"projected to inputs: uses after the reduction read {copy.short_name}, "
                        "recomputed from " + ", ".join(t.short_name for t in _ins))
    return made
