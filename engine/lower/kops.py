"""The fusion's ops in kernel IR, typed: each node holds the op's name, its dtypes and its
operand nodes, and engine.codegen spells it in C when it renders it (kexpr.Spelled).
Lowering builds them with the functions below, which give the operand itself where the op
leaves its value as it is (`same_value`: a cast between types of one representation, ceil
of an integer, ...): no node, so the passes see the operand.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.dtypes import DataType
from engine.lower.kexpr import Expr, Spelled, lit

Operand = int | str | Expr  # a string operand is C text: a Lit


@dataclass(frozen=True)
class Literal(Spelled):
    """A constant of `dtype` (a float value is rounded to it)."""

    value: float | int | bool
    dtype: DataType

    def operands(self) -> tuple[int | Expr, ...]:
        return ()


@dataclass(frozen=True)
class Cast(Spelled):
    """`x` converted from `src` to `dst`, as the reference's casts; `each`: by a conversion
    the compiler keeps apart from other conversions of the same value."""

    x: int | Expr
    src: DataType
    dst: DataType
    each: bool = False

    def operands(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Unary(Spelled):
    """A unary op (exp, neg, isnan, ...) computing in `dtype`."""

    op: str
    x: int | Expr
    dtype: DataType

    def operands(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Binary(Spelled):
    """A binary op computing in `dtype` (for comparisons: its operands' type); `b_value` is
    b's value where it is a compile-time constant."""

    op: str
    a: int | Expr
    b: int | Expr
    dtype: DataType
    b_value: float | int | None = None

    def operands(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Ternary(Spelled):
    """where(a, b, c), clamp(a, b, c) or lerp(a, b, c), of `dtype`."""

    op: str
    a: int | Expr
    b: int | Expr
    c: int | Expr
    dtype: DataType

    def operands(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b, self.c)


@dataclass(frozen=True)
class Combine(Spelled):
    """Two partial results of a reduction (add, mul, max, min) combined."""

    op: str
    a: int | Expr
    b: int | Expr
    dtype: DataType

    def operands(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Combiner(Spelled):
    """A reduction's combine as a function of two partials, the argument of the block and
    grid reductions' runtime calls."""

    op: str
    dtype: DataType

    def operands(self) -> tuple[int | Expr, ...]:
        return ()


# Types with one representation: a cast between two of them leaves the value as it is.
_SAME_REPRESENTATION = frozenset({DataType.Int, DataType.Index})
# Unary ops that leave an operand of a type as it is: rounding an integer, the sign of a bool.
_SAME_VALUE_UNARY = {
    **dict.fromkeys(("ceil", "floor", "round", "trunc"), frozenset({DataType.Int, DataType.Index, DataType.Int32})),
    "sign": frozenset({DataType.Bool}),
}


def same_value(n: Spelled) -> bool:
    """Whether `n` leaves its one operand's value as it is, so that its C is the operand's
    (engine.codegen.ops_table spells these as the operand; tests/engine/test_kops.py checks
    the two agree)."""
    if isinstance(n, Cast):
        if n.src.is_complex or n.src == DataType.Null:
            return False  # a type codegen refuses: the node stays, to fail there
        return n.src == n.dst or n.src in _SAME_REPRESENTATION and n.dst in _SAME_REPRESENTATION
    if isinstance(n, Unary):
        return n.dtype in _SAME_VALUE_UNARY.get(n.op, ())
    return False


def _node(n: Spelled) -> int | Expr:
    """`n`, or its operand where it leaves its value as it is."""
    return n.operands()[0] if same_value(n) else n


def literal(value: float | int | bool, dtype: DataType) -> Expr:
    return Literal(value, dtype)


def cast(x: Operand, src: DataType, dst: DataType, each: bool = False) -> int | Expr:
    return _node(Cast(lit(x), src, dst, each))


def unary(op: str, x: Operand, dtype: DataType) -> int | Expr:
    return _node(Unary(op, lit(x), dtype))


def binary(op: str, a: Operand, b: Operand, dtype: DataType, b_value: float | int | None = None) -> int | Expr:
    return _node(Binary(op, lit(a), lit(b), dtype, b_value))


def ternary(op: str, a: Operand, b: Operand, c: Operand, dtype: DataType) -> int | Expr:
    return _node(Ternary(op, lit(a), lit(b), lit(c), dtype))


def combine(op: str, a: Operand, b: Operand, dtype: DataType) -> int | Expr:
    return _node(Combine(op, lit(a), lit(b), dtype))


def combiner(op: str, dtype: DataType) -> Expr:
    return Combiner(op, dtype)
