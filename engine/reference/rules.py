"""The reference evaluator's rules: one handler per Expr class, registered with `handles`, and
the helpers handlers share (the evaluation context, casts, low-precision upcasts).

A handler is `fn(expr, inputs, ctx) -> list[outputs]`; inputs are torch tensors for
TensorViews and Python numbers for scalars. Other modules (engine.aten_eval, engine.nvfp4)
register their handlers and cast rules here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import ExecutionError
from engine.ir.base import Expr, Val
from engine.ir.scalar import Scalar

Handler = Callable[[Any, list[Any], "Context"], list[Any]]
HANDLERS: dict[type, Handler] = {}


def handles(*classes: type) -> Callable[[Handler], Handler]:
    """Register a handler for Expr classes (other modules add theirs this way)."""

    def deco(fn: Handler) -> Handler:
        for c in classes:
            HANDLERS[c] = fn
        return fn

    return deco


class Context:
    """Bindings of scalars (extents, scalar inputs) and the device to compute on."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.env: dict[Scalar, Any] = {}

    def scalar(self, s: Scalar) -> Any:
        try:
            return s.evaluate(self.env)
        except KeyError as e:
            raise ExecutionError(f"scalar {s.inline()} has no value: {e}") from None


def cast_tensor(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Casts as the generated code does them (other modules override fp4/fp8 rules)."""
    rule = CASTS.get(dtype)
    if rule is not None:
        return rule(x)
    return x.to(to_torch(dtype))


# Special cast rules by destination type (the nvfp4 module registers fp4 and fp8 rules).
CASTS: dict[DataType, Callable[[torch.Tensor], torch.Tensor]] = {}
# Conversions to float of the torch dtypes torch cannot convert itself (the nvfp4 module
# registers packed fp4's).
TO_FLOAT: dict[torch.dtype, Callable[[torch.Tensor], torch.Tensor]] = {}


def up(x: Any) -> Any:
    """Low-precision floats are computed in float."""
    if isinstance(x, torch.Tensor):
        to_float = TO_FLOAT.get(x.dtype)
        if to_float is not None:
            return to_float(x)
        if x.is_floating_point() and x.dtype.itemsize < 4:
            return x.float()
    return x


def as_dtype(x: Any, dtype: DataType) -> Any:
    # Through the cast rules: fp4 and fp8 round as the generated code does.
    return cast_tensor(x, dtype) if isinstance(x, torch.Tensor) else x


def out_dtype(expr: Expr, k: int = 0) -> DataType:
    return expr.outputs[k].dtype


def number(x: Any) -> Any:
    """A scalar argument as a Python number (scalars may arrive as 0-d tensors)."""
    return x.item() if isinstance(x, torch.Tensor) else x


def short_names(vals: Sequence[Val]) -> str:
    return ", ".join(getattr(v, "short_name", "?") for v in vals)
