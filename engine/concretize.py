"""Concretization at the sizes a fusion is compiled for, as nvFuser concretizes a dynamic
fusion once the inputs' sizes are known (DynamicTransformConcretizer).

An expand of an iteration axis whose extent only the run settles (ExpandOp's `concretized`
axes: nvFuser's Symbolic IterDomains) becomes an expanded broadcast where that axis has one
element, so that schedulers and kernels see a broadcast, as after nvFuser's concretization;
where it has the size asked for, it stays an iteration axis. compile_fusion concretizes the
clone it segments; the definition stays as written (the reference evaluator decides the
same per run).

Two more rewrites of that clone before it is segmented: remove_empty drops the work on
tensors with no elements at the bound sizes (nvFuser's RemoveEmptyPass), and
index_before_cast makes indexing ops look up the fusion input their table is a cast of.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, IterType
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorDomain, TensorView
from engine.trace import Trace


def concretize(fusion: Fusion, value_of: Callable[[Scalar], int], trace: Trace | None = None) -> None:
    """Make the expands of `fusion` that the bound sizes (`value_of`) decide as they decide.
    The sizes have passed engine.shape_rules (every such axis has 1 element or the size asked
    for)."""
    changed = False
    for expr in fusion.exprs():
        if not isinstance(expr, ex.ExpandOp) or not expr.attributes.get("concretized"):
            continue
        src = [i for i in expr.input.domain.logical if not i.is_reduction]
        out: TensorView = expr.output
        logical = [i for i in out.domain.logical if not i.is_reduction]
        for k in expr.concretized:
            i = logical[k]
            size, asked = int(value_of(src[k].extent)), int(value_of(i.extent))
            if size != 1 or asked == 1:
                continue
            i.expanded_extent, i.extent, i.iter_type = i.extent, as_scalar(1), IterType.Broadcast
            _no_contiguity(out, i)
            changed = True
            if trace is not None:
                trace.event("concretize", out.short_name,
                            f"expand: axis {k} of {expr.input.short_name} ({src[k].extent.inline()}) has 1 element "
                            f"at these sizes: {out.short_name} axis {k} is a broadcast expanded to "
                            f"{i.expanded_extent.inline()} ({i})", rule="concretize_expand")
    if changed:
        fusion.changed()


def _no_contiguity(tv: TensorView, i: object) -> None:
    """A broadcast axis has no contiguity (None), wherever it sits in the allocation order."""
    dom = tv.domain
    dom.contiguity = [None if a is i else c for a, c in zip(dom.maybe_allocation, dom.contiguity)]


def remove_empty(fusion: Fusion, value_of: Callable[[Scalar], int], trace: Trace | None = None) -> None:
    """Drop the work on empty tensors at the bound sizes, as nvFuser's RemoveEmptyPass does
    after concretization: a reduction (or Welford) over an axis with no elements becomes a
    `full` of its initial value (a Welford: NaN mean, zero var_sum and count), and a fusion
    output with an axis of no elements a `full` of zeros, so that nothing reads the empty
    tensors feeding them. Outputs aliased to an input (written in place), outputs laid out in
    another order than logical and expanded broadcast outputs are left as they are. New
    extents are the bound sizes: the compiled fusion is specialised to them."""
    aliased = {id(o) for o, _ in fusion.queued_aliases}
    inputs = {id(v) for v in fusion.inputs}

    def empty(tv: TensorView) -> bool:
        return any(int(value_of(i.expanded_extent if i.expanded_extent is not None else i.extent)) == 0
                   for i in tv.domain.logical if not i.is_reduction)

    def replace(old: TensorView, fill: Scalar, why: str) -> None:
        if id(old) in aliased or not _plain_layout(old):
            return
        new = _full_like(fusion, old, fill, value_of)
        fusion.replace_all_uses(old, new)
        if trace is not None:
            trace.event("concretize", old.short_name, f"{why}: {old.short_name} is {new.short_name} = "
                        f"full({[int(value_of(s)) for s in new.definition.shape]}, {fill.value})",
                        rule="remove_empty")

    for expr in fusion.exprs():
        if isinstance(expr, (ex.ReductionOp, ex.WelfordOp)) and empty(expr.inputs[0]):
            outs = [o for o in expr.outputs if isinstance(o, TensorView) and not empty(o)]
            if isinstance(expr, ex.ReductionOp):
                fills = [expr.init]
            else:
                fills = [float("nan"), 0.0, 0]
            for out, fill in zip(expr.outputs, fills):
                if out in outs:
                    replace(out, as_scalar(_typed(fill, out.dtype), out.dtype),
                            f"{expr.op_name} over an axis with no elements at these sizes")
    for out in list(fusion.outputs):
        if (isinstance(out, TensorView) and id(out) not in inputs and out.definition is not None
                and not isinstance(out.definition, ex.FullOp) and empty(out)):
            replace(out, as_scalar(_typed(0, out.dtype), out.dtype), "an output with no elements at these sizes")


def _typed(value: float | int | bool, dtype: object) -> float | int | bool:
    if dtype.is_bool:
        return bool(value)
    if dtype.is_integer:
        return int(value)
    return float(value)


def _plain_layout(tv: TensorView) -> bool:
    """True when `tv` is allocated in logical order and has no expanded broadcast: a fresh
    `full` of its axes is laid out as it is."""
    dom = tv.domain
    logical = [i for i in dom.logical if not i.is_reduction]
    if dom.allocation is not None and [i for i in dom.allocation if not i.is_reduction] != logical:
        return False
    return all(i.expanded_extent is None for i in logical)


def _full_like(fusion: Fusion, tv: TensorView, fill: Scalar, value_of: Callable[[Scalar], int]) -> TensorView:
    """A `full` of `fill` with `tv`'s non-reduction axes (broadcasts stay broadcasts) at their
    bound sizes."""
    ids = []
    for i in tv.domain.logical:
        if i.is_reduction:
            continue
        ids.append(IterDomain(fusion, as_scalar(1) if i.is_broadcast else as_scalar(int(value_of(i.extent))),
                              IterType.Broadcast if i.is_broadcast else IterType.Iteration))
    out = TensorView(fusion, TensorDomain(ids), tv.dtype)
    ex.FullOp(fusion, out, [i.extent for i in ids], fill)
    return out


def index_before_cast(fusion: Fusion, trace: Trace | None = None) -> None:
    """Read the lookup table of select, index_select and take_along_axis/gather from the
    fusion input it is a cast of: index(cast(x)) is cast(index(x)), element by element. A
    kernel reads a lookup table from global memory at data-dependent positions, so a table
    computed in the kernel (the cast of the input) had to be written out in full first: a
    float copy of the logits for a cross entropy's take_along_axis of the label's logit.
    Now the few looked-up elements are cast, and the table is the input itself."""
    inputs = {id(v) for v in fusion.inputs}
    for e in fusion.exprs():
        if not isinstance(e, (ex.GatherOp, ex.SelectOp, ex.IndexSelectOp)):
            continue
        table = e.inputs[0]
        cast = table.definition if isinstance(table, TensorView) else None
        if not (isinstance(cast, ex.UnaryOp) and cast.op == "cast" and id(cast.input) in inputs
                and isinstance(cast.input, TensorView)):
            continue
        src, out = cast.input, e.output
        picked = TensorView(fusion, TensorDomain([
            IterDomain(fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
            for i in out.domain.logical if not i.is_reduction]), src.dtype)
        fusion.remove_expr(e)
        clone = object.__new__(type(e))
        clone.fusion, clone.inputs, clone.outputs = fusion, [src, *e.inputs[1:]], [picked]
        clone.attributes = dict(e.attributes)
        clone.name = fusion.register_expr(clone)
        ex.UnaryOp(fusion, "cast", out, picked)
        if trace is not None:
            trace.event("concretize", out.short_name,
                        f"{e.op_name} reads {src.short_name}, the input {table.short_name} is a cast of: "
                        f"{out.short_name} = cast({picked.short_name}), {picked.short_name} = "
                        f"{e.op_name}({src.short_name}, ...)", rule="index_before_cast")
