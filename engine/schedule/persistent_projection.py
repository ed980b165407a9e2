"""Persistent buffers projected to the fusion inputs (nvFuser's projectPersistentBuffers).

A buffer that can be recomputed from inputs through pointwise ops is projected when that is
smaller (a bf16 input instead of its float cast): its uses after the reduction read a copy
recomputed from the inputs by the same ops, and the inputs are what stays persistent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import (
    PersistentBufferInfo,
    downstream_tvs,
    dtype_bytes,
    is_fastest_dim_reduction,
    is_reduction_tv,
    pointwise_reach,
    sibling_tvs,
    upstream_tvs,
)
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import pairwise_logical_map
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


def _recompute(fusion: Fusion, t: TensorView, memo: dict[TensorView, TensorView],
               stops: list[TensorView]) -> TensorView:
    """A copy of `t` computed again from `stops` (fusion inputs, and reduction results the
    kernel holds by then) by the same pointwise ops."""
    if t in fusion.inputs or t in stops:
        return t
    if t in memo:
        return memo[t]
    e = t.definition
    assert e is not None
    ins = [_recompute(fusion, v, memo, stops) if isinstance(v, TensorView) else v for v in e.inputs]
    out = _copy_tv(t)
    _clone_expr(e, ins, [out])
    memo[t] = out
    return out


def row_ids(fusion: Fusion, ref: TensorView) -> set[IterDomain]:
    """The ids of the fusion's tensors that the logical maps of its ops pair with an
    iteration (row) axis of the inner reduction `ref` (broadcasts do not pair)."""
    rows = {i for i in ref.domain.logical if not i.is_reduction and not i.is_broadcast}
    pairs = []
    for e in fusion.exprs():
        for c in e.outputs:
            if not isinstance(c, TensorView):
                continue
            for p in {v for v in e.inputs if isinstance(v, TensorView)}:
                pairs += [(a, b) for a, b in pairwise_logical_map(p, c).items()
                          if not a.is_broadcast and not b.is_broadcast]
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            if (a in rows) != (b in rows):
                rows |= {a, b}
                changed = True
    return rows


def _row_invariant(fusion: Fusion, buf: TensorView, pb: PersistentBufferInfo) -> list[TensorView]:
    """The tensors `buf` is computed from that hold no row axis of an inner reduction it is
    live across (a norm's weight cast to float): the same for every row, they are computed
    once before the rows and held, so a recomputed copy of `buf` reads them rather than
    copies of its own (each copy would hold the whole weight again in registers)."""
    inner = next((r for r, live in pb.live_across.items() if buf in live and is_fastest_dim_reduction(r)),
                 None)
    if inner is None:
        return []
    rows = row_ids(fusion, inner)
    # Broadcasts of them (to the rows) are recomputed: they hold nothing of their own.
    return [t for t in upstream_tvs(buf) if t.definition is not None
            and not any(i in rows or i.is_broadcast for i in t.domain.logical)]


def project_to_inputs(fusion: Fusion, pb: PersistentBufferInfo, trace: Trace | None,
                      staged: bool = False) -> list[TensorView]:
    """Make the uses of each projectable buffer that lead to its reduction's result read a
    copy recomputed from the inputs, so that only the inputs stay persistent (nvFuser's
    projectPersistentBuffers). Returns the recomputed copies.

    A use leads to the result when it is read after the reduction (x * rstd), or when a
    path of pointwise ops (no reduction on the way) takes it to a tensor that is (w * dy,
    added to a term of the result): kept, such an operand would live across the reduction
    as well. The second kind is recomputed only when the inputs are narrower than the
    buffer (bf16 kept instead of its float cast), or when the inputs are `staged` (copied a
    step ahead into shared memory, which only inputs can be); from float inputs kept in
    registers it saves no bytes and reads them again. Then uses that read the results of the
    same reductions (`_stage`) share a copy, read in the same phase of the kernel; a copy
    shared across phases would itself live across the reduction between them. Otherwise one
    copy serves every use.
    Copies read the row-invariant tensors they need (`_row_invariant`) rather than their own.
    """
    made: list[TensorView] = []
    for buf, _ins in pb.projectable.items():
        uses: list = []
        rows = [t for t in _ins if t in fusion.inputs]
        narrower = staged or max(dtype_bytes(t) for t in rows) < dtype_bytes(buf)
        invariant = _row_invariant(fusion, buf, pb)
        for red, live in pb.live_across.items():
            if buf not in live:
                continue
            sibs = set(sibling_tvs(red))
            up = upstream_tvs(red)
            after: set[TensorView] = set()
            for s in sibs:
                after |= downstream_tvs(s)
            for e in fusion.uses_of(buf):
                outs = [o for o in e.outputs if isinstance(o, TensorView)]
                if e in uses or any(o in up or o in sibs for o in outs):
                    continue
                if any(o in after for o in outs) or (
                        narrower and any(pointwise_reach(o) & after for o in outs)):
                    uses.append(e)
        copies: dict[frozenset[TensorView], TensorView] = {}
        for e in uses:
            stage = _stage(e) if narrower else frozenset()
            copy = copies.get(stage)
            if copy is None:
                copy = copies[stage] = _recompute(fusion, buf, {}, [*_ins, *invariant])
                made.append(copy)
            fusion.replace_input_of(e, buf, copy)
            if trace is not None:
                trace.event("transform", buf.short_name,
                            f"projected to inputs: {_out_name(e)} reads {copy.short_name}, "
                            "recomputed from " + ", ".join(t.short_name for t in _ins))
    return made


def _stage(e: ex.Expr) -> frozenset[TensorView]:
    """The reductions whose results `e` reads, directly or through other ops."""
    out: set[TensorView] = set()
    for v in e.inputs:
        if isinstance(v, TensorView):
            out |= {t for t in upstream_tvs(v) | {v} if is_reduction_tv(t)}
    return frozenset(out)


def _out_name(e: ex.Expr) -> str:
    return next((o.short_name for o in e.outputs if isinstance(o, TensorView)), e.op_name)
