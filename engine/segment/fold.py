"""Folding of zero-filled factory chains before segmentation.

A `full` of zeros that is only cast, reshaped, broadcast, expanded, squeezed, copied or
summed stays a tensor of zeros: such an op's output is replaced by a new `full` of zeros
with the op's output shape. Seed 003's RoPE backward sums a zero gradient over the
grouped heads; without folding that is a kernel writing zeros and a reduction reading
them, with it the zeros are a factory again, which forwarding recomputes in the segment
that reads them (seed 003). Only zeros fold: every cast maps 0 to 0, a sum of zeros is 0
exactly and a max or min of them is 0, whatever the order of a kernel's reduction.
Fusion outputs are never replaced (their layout, e.g. an expanded axis, is the user's).
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.base import Expr, FusionGuard
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.ops.factory import full
from engine.trace import Trace

_SHAPE_OPS = (ex.ViewOp, ex.BroadcastOp, ex.ExpandOp, ex.SqueezeOp, ex.LoadStoreOp)
_REDUCTIONS = ("add", "max", "min")


def _zero_full(v: object) -> bool:
    d = getattr(v, "definition", None)
    if not isinstance(d, ex.FullOp):
        return False
    fill = d.fill
    return isinstance(fill, Scalar) and fill.is_const and fill.value == 0


def _foldable(e: Expr) -> bool:
    if isinstance(e, ex.UnaryOp):
        return e.op == "cast"
    if isinstance(e, ex.ReductionOp):
        return e.op in _REDUCTIONS
    if isinstance(e, ex.LoadStoreOp):
        return e.kind == "Set"
    return isinstance(e, _SHAPE_OPS)


def fold_zero_factories(fusion: Fusion, trace: Trace | None = None) -> int:
    """Replace every foldable op of zero `full`s by a `full` of zeros; returns how many."""
    folded = 0
    changed = True
    while changed:
        changed = False
        outputs = set(fusion.outputs)
        for e in fusion.exprs():
            out = e.outputs[0] if len(e.outputs) == 1 else None
            tensors = [v for v in e.inputs if isinstance(v, TensorView)]
            if (not isinstance(out, TensorView) or out in outputs or not tensors
                    or not _foldable(e) or not all(_zero_full(v) for v in tensors)):
                continue
            shape = [i.expanded_extent if i.expanded_extent is not None else i.extent
                     for i in out.domain.logical if not i.is_reduction]
            with FusionGuard(fusion):
                zeros = full(shape, 0, out.dtype)
            for use in fusion.uses_of(out):
                fusion.replace_input_of(use, out, zeros)
            if trace is not None:
                trace.event("fold", out.short_name,
                            f"{out.short_name} = {type(e).__name__} of zeros is zeros: replaced by "
                            f"{zeros.short_name} = full(..., 0)", op=type(e).__name__,
                            replacement=zeros.short_name)
            folded += 1
            changed = True
            break
    return folded
