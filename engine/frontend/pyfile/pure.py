"""Python's math module, as a fusion file may use it: pure functions on numbers.

`import math` (or `from math import sqrt, pi`) binds these; `math.sqrt(hidden)`,
`math.pi`, `math.prod(shape)`, `math.ceil(n / 128)` in a fusion body or an inputs list are
computed by the loader on the numbers it holds. Functions whose cost grows with their
argument (factorial, comb, perm) are not here; results stay within the engine's 64-bit
integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}

# name -> (fewest, most positional arguments; None: any number)
_ARITY: dict[str, tuple[int, int | None]] = {
    **{name: (1, 1) for name in ("sqrt", "exp", "exp2", "log2", "log10", "log1p", "expm1", "ceil", "floor", "trunc",
                                 "fabs", "sin", "cos", "tan", "tanh", "asin", "acos", "atan", "sinh", "cosh",
                                 "asinh", "acosh", "atanh", "erf", "erfc", "lgamma", "isqrt", "isfinite", "isinf",
                                 "isnan", "radians", "degrees", "prod", "fsum", "cbrt")},
    "log": (1, 2), "pow": (2, 2), "atan2": (2, 2), "copysign": (2, 2), "fmod": (2, 2), "ldexp": (2, 2),
    "remainder": (2, 2), "hypot": (0, None), "gcd": (0, None), "lcm": (0, None), "isclose": (2, 2),
    "dist": (2, 2),
}
FUNCTIONS = frozenset(n for n in _ARITY if hasattr(math, n))
# Functions that take one sequence of numbers.
_SEQUENCE = ("prod", "fsum")
_INT_MAX = (1 << 63) - 1
# How many items prod and fsum read (as the loader bounds its own lists).
_MAX_ITEMS = 10_000


class MathError(ValueError):
    """A math call the loader refuses: its message says why."""


def call(name: str, args: list[Any]) -> Any:
    """math.<name>(*args) on numbers; MathError for anything else (wrong arguments, a domain
    error, an overflow, an integer past 64 bits)."""
    fewest, most = _ARITY[name]
    if not fewest <= len(args) <= (len(args) if most is None else most):
        raise MathError(f"math.{name} takes {fewest if fewest == most else f'{fewest} or more'} "
                        f"argument{'s' if most != 1 else ''}, got {len(args)}")
    if name in _SEQUENCE:
        items = args[0]
        if not isinstance(items, (list, tuple)) or len(items) > _MAX_ITEMS or not all(_number(x) for x in items):
            raise MathError(f"math.{name} takes a list of numbers")
        return _prod(items) if name == "prod" else math.fsum(items)
    if not all(_number(a) for a in args):
        raise MathError(f"math.{name} takes numbers, got {', '.join(type(a).__name__ for a in args)}")
    fn: Callable[..., Any] = getattr(math, name)
    try:
        value = fn(*args)
    except (ValueError, OverflowError, ZeroDivisionError, TypeError) as e:
        raise MathError(f"math.{name}{tuple(args)!r}: {e}") from None
    return _within(name, value)


def _prod(items: list[Any] | tuple[Any, ...]) -> Any:
    """math.prod, stopped as soon as an integer product leaves 64 bits."""
    out: Any = 1
    for x in items:
        out *= x
        if isinstance(out, int) and abs(out) > _INT_MAX:
            raise MathError("math.prod: the product does not fit in 64 bits")
    return out


def _within(name: str, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _INT_MAX:
        raise MathError(f"math.{name}: the result does not fit in 64 bits")
    return value


def _number(v: Any) -> bool:
    return isinstance(v, (bool, int, float)) and (not isinstance(v, int) or abs(v) <= _INT_MAX)
