"""Concretization at the sizes a fusion is compiled for, as nvFuser concretizes a dynamic
fusion once the inputs' sizes are known (DynamicTransformConcretizer).

An expand of an iteration axis whose extent only the run settles (ExpandOp's `concretized`
axes: nvFuser's Symbolic IterDomains) becomes an expanded broadcast where that axis has one
element, so that schedulers and kernels see a broadcast, as after nvFuser's concretization;
where it has the size asked for, it stays an iteration axis. compile_fusion concretizes the
clone it segments; the definition stays as written (the reference evaluator decides the
same per run).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterType
from engine.ir.scalar import Scalar, as_scalar
from engine.ir.tensorview import TensorView
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
