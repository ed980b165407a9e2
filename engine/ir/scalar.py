"""Symbolic scalars: extents, scalar inputs, and arithmetic on them.

A scalar is a constant, a free symbol (named i0, i2, ... from its fusion's counter,
as nvFuser names them) or an operation on other scalars. Constants fold on
construction; free symbols are bound when input shapes are known.
"""

from __future__ import annotations

import enum
import math
import operator
import struct
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import torch

from engine.dtypes import DataType, promote, to_torch
from engine.ir.base import Val
from engine.ir.unary_text import unary_text
from engine.torch_ops import binary_fn, unary_fn

Number: TypeAlias = int | float | bool
ScalarLike: TypeAlias = "Scalar | int | float | bool"


def _c_div(a: Any, b: Any) -> Any:
    # Integer division truncates, as the generated C does (Python's // floors); float
    # division by zero is IEEE's inf or nan there, not an exception.
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _c_mod(a: Any, b: Any) -> Any:
    # C's % and fmod: the result takes the dividend's sign (Python's % the divisor's).
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _c_div(a, b)
    return math.nan if b == 0 else math.fmod(a, b)


# op -> (printed symbol or function name, is_infix, python implementation)
_OPS: dict[str, tuple[str, bool, Callable[[Any, Any], Any]]] = {
    "add": ("+", True, operator.add),
    "sub": ("-", True, operator.sub),
    "mul": ("*", True, operator.mul),
    "div": ("/", True, _c_div),
    "mod": ("%", True, _c_mod),
    "ceilDiv": ("ceilDiv", False, lambda a, b: -(-a // b)),
    "max": ("max", False, max),
    "min": ("min", False, min),
}
# The ops of extent arithmetic; any other op on scalars is a frontend op (lt, fmod, ...).
EXTENT_OPS = frozenset(_OPS)


def format_number(value: Number) -> str:
    """Print a constant as nvFuser does: integral values without a fraction."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _symbol_prefix(dtype: DataType) -> str:
    if dtype.is_bool:
        return "b"
    if dtype.is_float:
        return "d" if dtype == DataType.Double else "f"
    if dtype.is_complex:
        return "c"
    return "i"


class Scalar(Val):
    def __init__(
        self,
        dtype: DataType = DataType.Index,
        value: Number | None = None,
        *,
        name: int | None = None,
        op: str | None = None,
        operands: tuple[Scalar, ...] = (),
    ) -> None:
        super().__init__()
        self.dtype = dtype
        self.value = value
        self.name = name
        self.op = op
        self.operands = operands

    # ---- kinds -------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return self.value is not None

    @property
    def is_symbol(self) -> bool:
        return self.value is None and self.op is None

    # ---- printing ----------------------------------------------------------
    def inline(self) -> str:
        """nvFuser's toInlineString: `4096`, `i0`, `( i0 * i2 )`, `( ceilDiv(i0, 4) )`."""
        value = self.value
        if type(value) is int:  # most extents: format_number's answer without the call
            return str(value)
        if value is not None:
            return format_number(value)
        if self.op is None:
            return f"{_symbol_prefix(self.dtype)}{self.name}"
        if len(self.operands) == 1:
            # nvFuser prints a unary op as its tensor form does, without parentheses:
            # `-d1`, `reciprocal(d1)`, `sqrtf(f3)`, `(float)(i2)`.
            (x,) = self.operands
            return unary_text(self.op, x.inline(), x.dtype, self.dtype)
        if len(self.operands) == 3:  # where, clamp, lerp on scalars
            return f"( {self.op}({', '.join(x.inline() for x in self.operands)}) )"
        a, b = (x.inline() for x in self.operands)
        if self.op not in _OPS:  # a frontend op on scalars (lt, fmod, bitwise_and, ...)
            return f"( {self.op}({a}, {b}) )"
        symbol, infix, _ = _OPS[self.op]
        return f"( {a} {symbol} {b} )" if infix else f"( {symbol}({a}, {b}) )"

    @property
    def short_name(self) -> str:
        return self.inline()

    def __str__(self) -> str:
        return self.inline()

    def __repr__(self) -> str:
        return f"Scalar({self.inline()})"

    # ---- evaluation --------------------------------------------------------
    def evaluate(self, env: Mapping[Scalar, Number] | None = None) -> Number:
        """Value once free symbols are bound in `env`; KeyError names the unbound one."""
        if self.value is not None:
            return self.value
        if self.op is None:
            if env is None or self not in env:
                raise KeyError(f"scalar {self.inline()} is not bound")
            return env[self]
        if len(self.operands) == 1:
            (x,) = self.operands
            return eval_unary(self.op, x.evaluate(env), x.dtype, self.dtype)
        if len(self.operands) == 3:
            args = [x.evaluate(env) for x in self.operands]
            return eval_ternary(self.op, *args, self.dtype)
        x, y = self.operands
        a, b = x.evaluate(env), y.evaluate(env)
        if self.op not in _OPS:
            return eval_binary(self.op, a, b, x.dtype, y.dtype, self.dtype)
        out = _OPS[self.op][2](a, b)
        # A float scalar computes in single precision in the kernel; so does its value here.
        return _to_f32(out) if self.dtype is DataType.Float else out

    def free_symbols(self) -> set[Scalar]:
        if self.is_symbol:
            return {self}
        out: set[Scalar] = set()
        for x in self.operands:
            out |= x.free_symbols()
        return out

    # ---- arithmetic --------------------------------------------------------
    def __add__(self, other: ScalarLike) -> Scalar:
        return binary("add", self, other)

    def __radd__(self, other: ScalarLike) -> Scalar:
        return binary("add", other, self)

    def __sub__(self, other: ScalarLike) -> Scalar:
        return binary("sub", self, other)

    def __rsub__(self, other: ScalarLike) -> Scalar:
        return binary("sub", other, self)

    def __mul__(self, other: ScalarLike) -> Scalar:
        return binary("mul", self, other)

    def __rmul__(self, other: ScalarLike) -> Scalar:
        return binary("mul", other, self)

    def __floordiv__(self, other: ScalarLike) -> Scalar:
        return binary("div", self, other)

    def __mod__(self, other: ScalarLike) -> Scalar:
        return binary("mod", self, other)


def as_scalar(x: ScalarLike, dtype: DataType | None = None) -> Scalar:
    if isinstance(x, Scalar):
        return x
    if isinstance(x, bool):
        return Scalar(dtype or DataType.Bool, x)
    if isinstance(x, int):
        return Scalar(dtype or DataType.Index, x)
    if isinstance(x, float):
        return Scalar(dtype or DataType.Double, x)
    raise TypeError(f"not a scalar: {x!r}")


def const(value: Number, dtype: DataType | None = None) -> Scalar:
    return as_scalar(value, dtype)


def _simplify(op: str, a: Scalar, b: Scalar, dtype: DataType | None = None) -> Scalar | None:
    av, bv = a.value, b.value
    if av is not None and bv is not None:
        out_dtype = dtype or a.dtype
        value = _OPS[op][2](av, bv)
        return Scalar(out_dtype, _to_f32(value) if out_dtype is DataType.Float else value)
    if op == "add" and av == 0:
        return b
    if op in ("add", "sub") and bv == 0:
        return a
    if op == "mul" and av == 1:
        return b
    if op in ("mul", "div", "ceilDiv") and bv == 1:
        return a
    if op == "mul" and (av == 0 or bv == 0):
        return Scalar(a.dtype, 0)
    return None


def binary(op: str, a: ScalarLike, b: ScalarLike, dtype: DataType | None = None) -> Scalar:
    """Scalar arithmetic with constant folding and the identities x+0, x*1, x/1.
    `dtype` is the promoted result type (the frontend's); extents leave it to the operands."""
    sa, sb = as_scalar(a), as_scalar(b)
    if op not in _OPS:
        # A frontend op without an extent-arithmetic form: folded through the op's
        # evaluation when constant, no identities (their types differ op by op).
        out_dtype = dtype or sa.dtype
        if sa.is_const and sb.is_const:
            return Scalar(out_dtype, eval_binary(op, sa.value, sb.value, sa.dtype, sb.dtype, out_dtype))
        return Scalar(out_dtype, op=op, operands=(sa, sb))
    simple = _simplify(op, sa, sb, dtype)
    # An identity (x * 1) keeps x, unless promotion widens its type (Index * 1.0).
    if simple is not None and (dtype is None or simple.dtype == dtype):
        return simple
    if dtype is None:
        dtype = sa.dtype if not sa.is_const else sb.dtype
    return Scalar(dtype, op=op, operands=(sa, sb))


# Types a symbolic scalar may have after a cast or unary op: the kernel holds a scalar
# expression in one of these C types (storage types like half only exist in tensors).
SCALAR_DTYPES = (DataType.Bool, DataType.Int32, DataType.Int, DataType.Index, DataType.Float, DataType.Double)


def unary(op: str, x: Scalar, dtype: DataType) -> Scalar:
    """`op` applied to `x` with result type `dtype` ("cast" converts); constants fold."""
    if op == "cast" and x.dtype == dtype:
        return x
    if x.value is not None:
        return Scalar(dtype, eval_unary(op, x.value, x.dtype, dtype))
    return Scalar(dtype, op=op, operands=(x,))


def eval_unary(op: str, value: Number, src: DataType, dst: DataType) -> Number:
    """The value of a unary scalar op as the kernel computes it: torch's function in the
    op's compute type (the result type, or the operand's for predicates), as the
    reference evaluator computes the tensor op."""
    if op == "cast":
        if dst.is_bool:
            return bool(value)
        if dst.is_integer:
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"cannot cast {format_number(value)} to {dst.cuda_name}")
            return int(torch.tensor(int(value)).to(to_torch(dst)).item())
        return _to_f32(float(value)) if dst is DataType.Float else float(value)
    compute = src if dst.is_bool else dst
    t = torch.tensor(value, dtype=to_torch(compute))
    return unary_fn(op)(t).to(to_torch(dst)).item()


def binary_compute_dtype(op: str, a: DataType, b: DataType, dst: DataType) -> DataType:
    """The type a scalar binary op computes in, as the tensor op's lowering picks it:
    comparisons in the promoted operand type, logical ops on bools, the rest in the result
    type (the frontend promoted it already)."""
    if op in ("logical_and", "logical_or"):
        return DataType.Bool
    if dst.is_bool and op not in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return promote(a, b)
    return dst


def eval_binary(op: str, a: Number, b: Number, a_dtype: DataType, b_dtype: DataType, dst: DataType) -> Number:
    """The value of a scalar binary op outside the extent arithmetic (comparisons, fmod,
    bitwise ops, pow, ...) as the kernel computes it: the op's torch function (engine.torch_ops,
    the reference evaluator's too) in the op's compute type."""
    compute = binary_compute_dtype(op, a_dtype, b_dtype, dst)
    ta, tb = (torch.tensor(v, dtype=to_torch(compute)) for v in (a, b))
    out = binary_fn(op, compute)(ta, tb).to(to_torch(dst)).item()
    return _to_f32(out) if dst is DataType.Float else out


TERNARY_OPS = ("where", "clamp", "lerp")


def ternary(op: str, a: Scalar, b: Scalar, c: Scalar, dtype: DataType) -> Scalar:
    """where(a, b, c), clamp(a, b, c) or lerp(a, b, c) on scalars, of result type `dtype`;
    the frontend has cast the value operands to `dtype` (where's condition is a bool).
    Constants fold."""
    if op not in TERNARY_OPS:
        raise ValueError(f"unknown ternary scalar op {op!r}")
    if a.is_const and b.is_const and c.is_const:
        return Scalar(dtype, eval_ternary(op, a.value, b.value, c.value, dtype))
    return Scalar(dtype, op=op, operands=(a, b, c))


def eval_ternary(op: str, a: Number, b: Number, c: Number, dst: DataType) -> Number:
    """The value of a ternary scalar op as the kernel computes it (ops_table.ternary):
    in the result type, with torch's NaN-propagating clamp and the reference's
    `a + c * (b - a)` lerp."""
    if op == "where":
        out: Any = b if a else c
        return _to_f32(float(out)) if dst is DataType.Float else out
    ta, tb, tc = (torch.tensor(v, dtype=to_torch(dst)) for v in (a, b, c))
    if op == "clamp":
        res = torch.minimum(torch.maximum(ta, tb), tc)
    elif op == "lerp":
        res = ta + tc * (tb - ta)
    else:
        raise ValueError(f"unknown ternary scalar op {op!r}")
    return res.item()


def _to_f32(value: Any) -> Any:
    if not isinstance(value, float):
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def ceil_div(a: ScalarLike, b: ScalarLike) -> Scalar:
    return binary("ceilDiv", a, b)


def smax(a: ScalarLike, b: ScalarLike) -> Scalar:
    return binary("max", a, b)


def smin(a: ScalarLike, b: ScalarLike) -> Scalar:
    return binary("min", a, b)


def same_scalar(a: Scalar, b: Scalar) -> bool:
    """Structural equality: equal constants, the same symbol, or equal expressions. Integer
    sums are equal when their terms are, in any order and grouping: a cat of three inputs pads
    the first to i0 + (i3 + i5) and the others to (i0 + i3) + i5."""
    if a is b:
        return True
    if a.value is not None or b.value is not None:
        return a.value is not None and b.value is not None and a.value == b.value
    if a.op is None or b.op is None or a.op != b.op:
        return False
    if a.op == "cast" and a.dtype != b.dtype:
        return False
    if a.op == "add" and a.dtype.is_integer and b.dtype.is_integer:
        return _same_terms(_sum_terms(a), _sum_terms(b))
    return all(same_scalar(x, y) for x, y in zip(a.operands, b.operands))


def _sum_terms(s: Scalar) -> list[Scalar]:
    """The terms of a nested integer sum, left to right."""
    if s.op == "add" and s.value is None and s.dtype.is_integer:
        return [t for x in s.operands for t in _sum_terms(x)]
    return [s]


def _same_terms(xs: list[Scalar], ys: list[Scalar]) -> bool:
    if len(xs) != len(ys):
        return False
    rest = list(ys)
    for x in xs:
        k = next((k for k, y in enumerate(rest) if same_scalar(x, y)), None)
        if k is None:
            return False
        rest.pop(k)
    return True


def shareable_constant(x: Any) -> bool:
    """Whether an attribute value holds nothing but atoms and unnamed constant scalars
    outside the graph: a copy of it would be the same values, so copies of a fusion may
    share it."""
    t = type(x)
    if t is Scalar:
        return (x.value is not None and x.name is None and x.definition is None and not x.uses
                and all(shareable_constant(o) for o in x.operands))
    if t is list or t is tuple:
        return all(shareable_constant(y) for y in x)
    if t is dict:
        return all(shareable_constant(y) for y in x.values())
    return t in (int, float, bool, str, type(None)) or isinstance(x, enum.Enum)
