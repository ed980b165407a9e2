"""Evaluating a Fusion: inputs checked and bound, each expression run by its handler
(engine.reference.rules) in order, outputs given their layouts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import ExecutionError
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.nvfp4 import packed_dim
from engine.reference.layouts import finish_output
from engine.reference.rules import HANDLERS, Context, short_names
from engine.runtime.placement import run_device


def evaluate(fusion: Fusion, inputs: Sequence[Any], device: Any = None,
             after: Callable[[Expr, list[Any]], list[Any]] | None = None) -> list[Any]:
    """Outputs of `fusion` for `inputs` (torch tensors and numbers). `after(expr, outs)`,
    when given, sees each expression's outputs and returns what later ones read instead
    (the fuzz harness perturbs them to measure how rounding moves the results)."""
    if len(inputs) != len(fusion.inputs):
        raise ExecutionError(f"fusion takes {len(fusion.inputs)} inputs, got {len(inputs)}")
    ctx = Context(run_device("reference", inputs, device))
    values: dict[Val, Any] = {}
    for k, (val, x) in enumerate(zip(fusion.inputs, inputs)):
        values[val] = bind_input(k, val, x, ctx)
    check_extents(fusion, ctx.env)
    for expr in fusion.exprs():
        args = [_value(v, values, ctx) for v in expr.inputs]
        handler = HANDLERS.get(type(expr))
        if handler is None:
            raise ExecutionError(f"the reference evaluator has no rule for {type(expr).__name__}")
        try:
            outs = handler(expr, args, ctx)
        except ExecutionError:
            raise
        except Exception as e:  # name the op at fault, keep the cause
            raise ExecutionError(f"{type(expr).__name__} producing {short_names(expr.outputs)} failed: {e}") from e
        if after is not None:
            outs = after(expr, outs)
        for v, t in zip(expr.outputs, outs):
            values[v] = t
    return [finish_output(v, _value(v, values, ctx)) for v in fusion.outputs]


def check_extents(fusion: Fusion, env: dict) -> None:
    """The sizes ops asked iteration axes to have (Fusion.extent_checks) against the bound ones."""
    for have, want, where in getattr(fusion, "extent_checks", ()):
        try:
            a, b = int(have.evaluate(env)), int(want.evaluate(env))
        except KeyError:
            continue  # a segment's fusion need not bind every symbol of the complete one
        if a != b:
            raise ExecutionError(
                f"{where} has {a} elements, not {b}, and is not a broadcast axis: its size is an input's, which "
                "nvFuser's expand keeps, binding it to the size asked for (define a size-1 input axis as a "
                "broadcast: shape 1 or contiguity None)")


def _value(v: Val, values: dict[Val, Any], ctx: Context) -> Any:
    if v in values:
        return values[v]
    if isinstance(v, Scalar):
        return ctx.scalar(v)
    raise ExecutionError(f"{getattr(v, 'short_name', v)} is used before it is computed")


def bind_input(k: int, val: Val, x: Any, ctx: Context) -> Any:
    """Check an input against its definition and bind its symbolic extents."""
    if isinstance(val, Scalar):
        if isinstance(x, torch.Tensor):
            if x.numel() != 1:
                raise ExecutionError(f"input {k} ({val.inline()}) is a scalar; got a tensor of shape {tuple(x.shape)}")
            x = x.item()
        if not isinstance(x, (int, float, bool, complex)):
            raise ExecutionError(f"input {k} ({val.inline()}) must be a number, got {type(x).__name__}")
        ctx.env[val] = x
        return x
    tv: TensorView = val  # type: ignore[assignment]
    if not isinstance(x, torch.Tensor):
        raise ExecutionError(f"input {k} ({tv.short_name}) must be a torch tensor, got {type(x).__name__}")
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    if x.dim() != len(logical):
        raise ExecutionError(f"input {k} ({tv.short_name}) must have rank {len(logical)}, got shape {tuple(x.shape)}")
    want = to_torch(tv.dtype)
    if x.dtype != want:
        raise ExecutionError(
            f"input {k} ({tv.short_name}) must be {tv.dtype.cuda_name} ({want}), got {x.dtype}"
        )
    for d, (i, size) in enumerate(zip(logical, element_sizes(tv.dtype, x))):
        extent = i.expanded_extent if i.expanded_extent is not None else i.extent
        if i.is_broadcast and i.expanded_extent is None:
            if size != 1:
                raise ExecutionError(f"input {k} ({tv.short_name}) axis {d} is a broadcast of size 1, got {size}")
            continue
        _bind_extent(k, tv, d, extent, size, ctx)
    return x.to(ctx.device)


def element_sizes(dtype: DataType, x: torch.Tensor) -> list[int]:
    """Sizes in elements: an fp4 tensor packs two values per byte on its stride-1 axis."""
    sizes = list(x.shape)
    if dtype == DataType.Float4_e2m1fn:
        sizes[packed_dim(x)] *= 2
    return sizes


def _bind_extent(k: int, tv: TensorView, d: int, extent: Scalar, size: int, ctx: Context) -> None:
    if extent.is_const:
        if extent.value != size:
            raise ExecutionError(f"input {k} ({tv.short_name}) axis {d} must have size {extent.value}, got {size}")
    elif extent.is_symbol:
        bound = ctx.env.setdefault(extent, size)
        if bound != size:
            raise ExecutionError(
                f"input {k} ({tv.short_name}) axis {d} has size {size} but {extent.inline()} is {bound}"
            )


def bind_env(fusion: Fusion, inputs: list[Any]) -> dict:
    """Symbolic extents and scalar inputs bound to the values of `inputs`."""
    # Only shapes matter: meta tensors bind the extents without copying any data.
    ctx = Context(torch.device("meta"))
    for k, (v, x) in enumerate(zip(fusion.inputs, inputs)):
        if isinstance(x, torch.Tensor):
            x = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
        bind_input(k, v, x, ctx)
    return ctx.env
