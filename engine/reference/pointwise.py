"""Reference rules of the pointwise ops (unary, binary, ternary). The torch function of each
op (unary_fn, binary_fn), which scalar ops evaluate with too, is engine.torch_ops'; they are
re-exported here and from engine.reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.dtypes import compute_dtype, from_torch, to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.reference.rules import as_dtype, cast_tensor, handles, out_dtype, up
from engine.shape_rules import pointwise_mismatch
from engine.torch_ops import binary_fn, unary_fn


@handles(ex.UnaryOp)
def _unary(expr, args, ctx):
    (x,) = args
    dtype = out_dtype(expr)
    if expr.op == "cast":
        return [cast_tensor(x, dtype)]
    x = up(x)
    if expr.op in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf") and not x.is_floating_point():
        x = x.float()
    return [as_dtype(unary_fn(expr.op)(x), dtype)]


# Scalar operands as 0-dim tensors, kept per value, type and device: a host step of a compiled
# fusion (a no_op segment's 0-dim arithmetic) evaluates the same constants at every run, and a
# fresh tensor on a GPU is a host-to-device copy each time. Op results are new tensors; these
# are never written.
_CONSTANTS: dict[tuple[str, type, torch.dtype, torch.device], torch.Tensor] = {}


def _tensorize(x: Any, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    key = (repr(x), type(x), dtype, like.device)  # repr: -0.0 and nan kept apart
    got = _CONSTANTS.get(key)
    if got is None:
        got = torch.tensor(x, dtype=dtype, device=like.device)
        if len(_CONSTANTS) < 4096:
            _CONSTANTS[key] = got
    return got


def check_pointwise_sizes(expr: Expr, args: Sequence[Any]) -> None:
    """Operands of a pointwise op agree axis by axis wherever neither axis is a broadcast
    (engine.shape_rules.pointwise_mismatch)."""
    why = pointwise_mismatch(expr, [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in args])
    if why is not None:
        raise ExecutionError(why)


@handles(ex.BinaryOp)
def _binary(expr, args, ctx):
    check_pointwise_sizes(expr, args)
    dtype = out_dtype(expr)
    # A bool result (comparisons, logical ops) computes in the operands' promoted type,
    # the rest in the result type; low-precision floats in float.
    work = to_torch(compute_dtype(expr.operand_dtype() if dtype.is_bool else dtype))
    tensor = next(a for a in args if isinstance(a, torch.Tensor))
    a, b = (_tensorize(x, tensor, work).to(work) for x in args)
    fn = binary_fn(expr.op, from_torch(work))
    if expr.op in ("maximum", "minimum") and a.dtype != b.dtype:
        b = b.to(a.dtype)
    return [as_dtype(fn(a, b), dtype)]


@handles(ex.TernaryOp)
def _ternary(expr, args, ctx):
    check_pointwise_sizes(expr, args)
    dtype = out_dtype(expr)
    work = to_torch(compute_dtype(dtype))
    tensor = next(a for a in args if isinstance(a, torch.Tensor))
    if expr.op == "where":
        c, a, b = args
        c = _tensorize(c, tensor, torch.bool)
        a, b = (_tensorize(x, tensor, work).to(work) for x in (a, b))
        return [as_dtype(torch.where(c, a, b), dtype)]
    a, b, c = (_tensorize(x, tensor, work).to(work) for x in args)
    if expr.op == "clamp":
        return [as_dtype(torch.minimum(torch.maximum(a, b), c), dtype)]
    if expr.op == "lerp":
        return [as_dtype(a + c * (b - a), dtype)]
    raise ExecutionError(f"unknown ternary op {expr.op}")
