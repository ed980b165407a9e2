"""The torch function of each pointwise op: the semantics the reference evaluator
(engine.reference.pointwise) and scalar constant folding (engine.ir.scalar) share.

In the bottom layer, so that both may import it: it uses torch only (DataType is a type
annotation here; binary_fn reads the dtype's kind off the object it is given).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from engine.dtypes import DataType


def _gelu(x):
    # nvFuser's formula, which the kernels compute: at +inf it is inf, where torch's gelu
    # gives NaN (gelu of pow(0, negative), for one).
    return x * 0.5 * (1 + torch.erf(x * math.sqrt(0.5)))


def _erfcinv(x):
    # torch has no erfcinv; erfinv(1 - x) would lose a tiny x's digits, the normal quantile
    # keeps them: erfc(z) = 2 * Phi(-z * sqrt 2).
    out = x.dtype if x.is_floating_point() else torch.float32
    return (-torch.special.ndtri(x.double() / 2) * 0.7071067811865476).to(out)


_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1,
    "log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos,
    "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv,
    "lgamma": torch.lgamma, "digamma": torch.digamma, "relu": torch.relu, "gelu": _gelu,
    "silu": torch.nn.functional.silu, "ceil": torch.ceil, "floor": torch.floor,
    "round": torch.round, "trunc": torch.trunc, "frac": torch.frac, "sign": torch.sign,
    "bitwise_not": torch.bitwise_not, "logical_not": torch.logical_not,
    "isfinite": torch.isfinite, "isinf": torch.isinf, "isnan": torch.isnan,
    "isneginf": torch.isneginf, "isposinf": torch.isposinf, "signbit": torch.signbit,
    "isreal": torch.isreal, "real": torch.real, "imag": torch.imag, "erfcinv": _erfcinv,
}


def unary_fn(op: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The torch function of a pointwise unary op (scalar ops evaluate with it too)."""
    return _UNARY[op]


def _int_div(a, b):
    """C's truncating division. torch's traps on MIN / -1 (SIGFPE: the whole process dies),
    so a -1 divisor negates instead: MIN wraps to MIN, as the kernels' fsDivInt gives."""
    minus_one = b == -1
    quotient = torch.div(a, torch.where(minus_one, torch.ones_like(b), b), rounding_mode="trunc")
    return torch.where(minus_one, torch.neg(a), quotient)


def _logical_right_shift(a, b):
    """Zero-filling right shift (torch has none): the arithmetic shift with the sign-filled
    top bits masked off; shifts outside [0, width) give 0, as the kernels do."""
    width = a.element_size() * 8
    s = b.clamp(1, width - 1)
    # (1 << (width - s)) - 1 wraps to the largest value for s == 1, the mask it should be.
    mask = torch.bitwise_left_shift(torch.ones_like(a), width - s) - 1
    shifted = torch.where(b == 0, a, torch.bitwise_right_shift(a, s) & mask)
    return torch.where((b < 0) | (b >= width), torch.zeros_like(a), shifted)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "mod": torch.fmod, "fmod": torch.fmod, "remainder": torch.remainder, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq, "ne": torch.ne,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift, "bitwise_right_shift": torch.bitwise_right_shift,
    "logical_right_shift": _logical_right_shift, "gcd": torch.gcd, "nextafter": torch.nextafter,
}


def binary_fn(op: str, dtype: DataType) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The torch function of a pointwise binary op computing in `dtype` (scalar ops
    evaluate with it too): integer division truncates, as C's does."""
    if op == "div" and not (dtype.is_float or dtype.is_complex):
        return _int_div
    return _BINARY[op]
