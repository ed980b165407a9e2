"""Symbolic scalars: extents, scalar inputs, and arithmetic on them.

A scalar is a constant, a free symbol (named i0, i2, ... from its fusion's counter,
as nvFuser names them) or an operation on other scalars. Constants fold on
construction; free symbols are bound when input shapes are known.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from engine.dtypes import DataType
from engine.ir.base import Val

Number: TypeAlias = int | float | bool
ScalarLike: TypeAlias = "Scalar | int | float | bool"

# op -> (printed symbol or function name, is_infix, python implementation)
_OPS: dict[str, tuple[str, bool, Callable[[Any, Any], Any]]] = {
    "add": ("+", True, operator.add),
    "sub": ("-", True, operator.sub),
    "mul": ("*", True, operator.mul),
    "div": ("/", True, lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else a / b),
    "mod": ("%", True, operator.mod),
    "ceilDiv": ("ceilDiv", False, lambda a, b: -(-a // b)),
    "max": ("max", False, max),
    "min": ("min", False, min),
}


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
        if self.value is not None:
            return format_number(self.value)
        if self.op is None:
            return f"{_symbol_prefix(self.dtype)}{self.name}"
        symbol, infix, _ = _OPS[self.op]
        a, b = (x.inline() for x in self.operands)
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
        fn = _OPS[self.op][2]
        a, b = (x.evaluate(env) for x in self.operands)
        return fn(a, b)

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


def _simplify(op: str, a: Scalar, b: Scalar) -> Scalar | None:
    av, bv = a.value, b.value
    if av is not None and bv is not None:
        return Scalar(a.dtype, _OPS[op][2](av, bv))
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


def binary(op: str, a: ScalarLike, b: ScalarLike) -> Scalar:
    """Scalar arithmetic with constant folding and the identities x+0, x*1, x/1."""
    sa, sb = as_scalar(a), as_scalar(b)
    simple = _simplify(op, sa, sb)
    if simple is not None:
        return simple
    dtype = sa.dtype if not sa.is_const else sb.dtype
    return Scalar(dtype, op=op, operands=(sa, sb))


def ceil_div(a: ScalarLike, b: ScalarLike) -> Scalar:
    return binary("ceilDiv", a, b)


def smax(a: ScalarLike, b: ScalarLike) -> Scalar:
    return binary("max", a, b)


def smin(a: ScalarLike, b: ScalarLike) -> Scalar:
    return binary("min", a, b)


def same_scalar(a: Scalar, b: Scalar) -> bool:
    """Structural equality: equal constants, the same symbol, or equal expressions."""
    if a is b:
        return True
    if a.value is not None or b.value is not None:
        return a.value is not None and b.value is not None and a.value == b.value
    if a.op is None or b.op is None or a.op != b.op:
        return False
    return all(same_scalar(x, y) for x, y in zip(a.operands, b.operands))
