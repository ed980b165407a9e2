"""Floating-point work of a fusion: what a roofline plot puts against the device's compute
ceiling.

The count is of element operations at the sizes a fusion was compiled for: each unary, binary or
ternary math op counts one per element of its output (casts and copies count nothing), each
reduction or Welford one per element it reads, a matmul or linear 2*M*N*K (plus the bias; the
partial products of an rfactor'ed one 2*M*N*K too, its parts of K kept as an axis);
moving data (broadcast, reshape, permute, slice, pad, cat, set, gather, factories) counts
nothing. It is the arithmetic the fusion asks for, not the instructions the kernel executes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.ir.exprs import (
    BinaryOp,
    LinearOp,
    MatmulOp,
    ReductionOp,
    RFactorLinearOp,
    RFactorMatmulOp,
    TernaryOp,
    UnaryOp,
    WelfordOp,
)
from engine.ir.tensorview import TensorView

# Unary ops that move or reinterpret a value without arithmetic.
_NO_MATH = frozenset({"cast", "set", "bitcast", "real", "imag"})


def elements(tv: TensorView, env: Mapping[Any, Any]) -> int:
    """Elements of `tv`'s logical domain (reduction axes excluded, broadcasts count 1)."""
    n = 1
    for d in tv.logical():
        if d.is_reduction or d.is_broadcast:
            continue
        n *= int(d.extent.evaluate(env))
    return n


def _read(tv: TensorView, env: Mapping[Any, Any]) -> int:
    """Elements a reduction reads: its input's logical domain, broadcasts at their expanded size."""
    n = 1
    for d in tv.logical():
        if d.is_reduction:
            continue
        if d.is_broadcast:
            n *= int(d.expanded_extent.evaluate(env)) if d.expanded_extent is not None else 1
        else:
            n *= int(d.extent.evaluate(env))
    return n


def expr_flops(expr: Any, env: Mapping[Any, Any]) -> int:
    """Element operations of one expression (see the module's docstring)."""
    out = expr.outputs[0] if expr.outputs else None
    if not isinstance(out, TensorView):
        return 0  # scalar arithmetic on extents and constants
    if isinstance(expr, UnaryOp):
        return 0 if expr.op in _NO_MATH else elements(out, env)
    if isinstance(expr, BinaryOp | TernaryOp):
        return elements(out, env)
    if isinstance(expr, ReductionOp | WelfordOp):
        src = expr.inputs[0]
        return _read(src, env) if isinstance(src, TensorView) else 0
    if isinstance(expr, RFactorMatmulOp | RFactorLinearOp):
        # The partial products of an rfactor: each kept part of K sums over the parts reduced.
        k = 1
        for d in out.logical():
            if d.is_reduction:
                k *= int(d.extent.evaluate(env))
        return 2 * elements(out, env) * k
    if isinstance(expr, MatmulOp | LinearOp):
        a = expr.inputs[0]
        k = int(a.logical()[-1].extent.evaluate(env)) if isinstance(a, TensorView) and a.logical() else 1
        bias = elements(out, env) if isinstance(expr, LinearOp) and expr.has_bias else 0
        return 2 * elements(out, env) * k + bias
    return 0
