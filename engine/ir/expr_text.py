"""How op lines spell their parts in nvFuser's listing: indentation, operands (tensors in
full, constants typed), flag and scalar lists, and the common two-line shape of an op.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.dtypes import DataType
from engine.ir.base import Val
from engine.ir.scalar import Scalar, format_number


def ind(n: int) -> str:
    return "  " * n


def operand(v: Val) -> str:
    """A value as it appears inside an op line: tensors in full, constants typed."""
    if isinstance(v, Scalar):
        return scalar_str(v)
    return str(v)


def scalar_str(s: Scalar) -> str:
    if s.value is not None and s.dtype.is_float and not isinstance(s.value, bool):
        return f"{s.dtype.cuda_name}({format_number(s.value)})"
    return s.inline()


def typed_value(value: Scalar | float | int | bool, dtype: DataType) -> str:
    """`float(0)`, `__bfloat(0)`: a constant cast to a tensor's dtype."""
    if isinstance(value, Scalar):
        if value.value is None:
            return value.inline()
        value = value.value
    return f"{dtype.cuda_name}({format_number(value)})"


def flags_str(flags: Sequence[bool]) -> str:
    return "{" + ", ".join("true" if f else "false" for f in flags) + "}"


def list_str(items: Sequence[object]) -> str:
    return "{" + ", ".join(x.inline() if isinstance(x, Scalar) else str(x) for x in items) + "}"


def two_lines(out: Val, rhs: str, indent: int, end: str = "\n") -> str:
    """The common shape: the output on its own line, then ` = rhs` one level in."""
    return f"{ind(indent)}{out}\n{ind(indent + 1)} = {rhs}{end}"
