"""Chains of view ops: ops whose output is its input's buffer seen with other sizes, strides
and offset (set, permute, reshape, squeeze, broadcast, expand), as engine.schedule.expr_eval
builds them without a kernel. Pre-segmentation (engine.preseg) cuts an output that is such a
view of another output apart, and the segmenter keeps the cut's segment_set with the views."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.shape_exprs import ViewOp
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.ir.base import Expr
    from engine.ir.fusion import Fusion

_VIEWS = (ex.BroadcastOp, ex.ExpandOp, ex.SqueezeOp, ViewOp)


def is_view(e: Expr | None, reshapes: bool = True) -> bool:
    """A view op; a plain set and a permute are LoadStoreOps of kind Set. Without `reshapes`,
    a reshape (ViewOp) is not counted."""
    if isinstance(e, ex.LoadStoreOp):
        return e.kind == "Set"
    return isinstance(e, _VIEWS) and (reshapes or not isinstance(e, ViewOp))


def view_chain(out: TensorView, reshapes: bool = True) -> tuple[TensorView, list[Expr]]:
    """The tensor `out` is a view of and the view ops from it to `out`, nearest `out` first."""
    chain: list[Expr] = []
    t = out
    while True:
        e = t.definition
        if not is_view(e, reshapes) or not isinstance(e.inputs[0], TensorView):
            return t, chain
        chain.append(e)
        t = e.inputs[0]


def only_views_from(fusion: Fusion, exprs: list[Expr]) -> bool:
    """Whether `exprs` and every op after them are views, and every tensor they make that
    nothing reads is an output of `fusion`."""
    outputs = set(fusion.outputs)
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if not is_view(e) or not isinstance(e.outputs[0], TensorView):
            return False
        t = e.outputs[0]
        uses = fusion.uses_of(t)
        if not uses and t not in outputs:
            return False
        stack.extend(uses)
    return True


def views_only_to_outputs(fusion: Fusion, tv: TensorView) -> bool:
    """Whether `tv` is read, and only by views ending in outputs of `fusion`: no kernel op
    reads what follows it, so all of it can be views of `tv`."""
    uses = fusion.uses_of(tv)
    return bool(uses) and only_views_from(fusion, uses)
