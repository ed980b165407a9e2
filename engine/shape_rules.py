"""Ops' size rules that only the sizes bound at run time can settle, checked from sizes alone.

The reference evaluator applies them to the tensors it computes; compile_fusion applies them
to the sizes of the example inputs, without computing anything, so that a fusion that cannot
run is refused before it is segmented, with the same message:

- pointwise operands agree axis by axis wherever neither axis is a broadcast (nvFuser
  broadcasts only broadcast axes, where torch would also stretch any size-1 axis);
- a reshape keeps the element count;
- an expand of an axis whose extent only the run settles (ExpandOp's `concretized` axes)
  finds it of 1 element (expanded) or of the size asked for (kept), as nvFuser's
  concretization requires.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView


def pointwise_mismatch(expr: Expr, shapes: Sequence[Sequence[int] | None]) -> str | None:
    """Why the operands of a pointwise op cannot be combined (None when they can). `shapes`
    are the operands' sizes in order, None for a scalar."""
    seen: dict[int, tuple[int, TensorView]] = {}
    for v, shape in zip(expr.inputs, shapes):
        if not isinstance(v, TensorView) or shape is None:
            continue
        ids = [i for i in v.domain.logical if not i.is_reduction]
        if len(ids) != len(shape):
            continue
        for d, (i, n) in enumerate(zip(ids, shape)):
            if i.is_broadcast:
                continue
            if d in seen and seen[d][0] != n:
                m, w = seen[d]
                return (f"{getattr(expr, 'op', expr.op_name)} producing {_names(expr)}: axis {d} of {w.short_name} "
                        f"has {m} elements and of {v.short_name} {n}; neither is a broadcast axis (nvFuser "
                        "broadcasts only those: broadcast_in_dim or expand first)")
            seen[d] = (n, v)
    return None


def reshape_mismatch(expr: Expr, shape: Sequence[int], new_shape: Sequence[int] | None) -> str | None:
    """Why a reshape of an input of sizes `shape` to `new_shape` (the sizes it asked for)
    cannot run (None when it can)."""
    if new_shape is None or math.prod(new_shape) == math.prod(shape):
        return None
    return (f"reshape of {expr.input.short_name}: {list(shape)} has {math.prod(shape)} elements, the new shape "
            f"{list(new_shape)} has {math.prod(new_shape)}")


def expand_mismatch(expr: Expr, k: int, size: int, asked: int) -> str | None:
    """Why axis `k` of an expand's input, of `size` elements, cannot take the size `asked`
    for (None when it is 1 or that size)."""
    if size in (1, asked):
        return None
    return (f"expand producing {_names(expr)}: axis {k} of {expr.input.short_name} has {size} elements, so it can "
            f"neither be expanded to {asked} (only an axis of 1 element is) nor kept (nvFuser: \"Mismatch in sizes "
            "when concretizing expand\")")


def check_sizes(fusion: Fusion, size_of: Callable[[TensorView], list[int]], value_of: Callable[..., int]) -> None:
    """Every rule above for every op of `fusion`, from `size_of(tv)` (a tensor's sizes) and
    `value_of(scalar)` (a bound scalar). Raises ExecutionError naming the op."""
    for expr in fusion.exprs():
        why = None
        if isinstance(expr, (ex.BinaryOp, ex.TernaryOp)):
            why = pointwise_mismatch(expr, [size_of(v) if isinstance(v, TensorView) else None for v in expr.inputs])
        elif isinstance(expr, ex.ViewOp) and expr.new_shape is not None and isinstance(expr.input, TensorView):
            why = reshape_mismatch(expr, size_of(expr.input), [int(value_of(s)) for s in expr.new_shape])
        elif isinstance(expr, ex.ExpandOp):
            sizes = size_of(expr.input)
            for k in expr.attributes.get("concretized", ()):
                why = why or expand_mismatch(expr, k, sizes[k], int(value_of(expr.shape[k])))
        if why is not None:
            raise ExecutionError(why)


def _names(expr: Expr) -> str:
    return ", ".join(getattr(v, "short_name", "?") for v in expr.outputs)
