"""Op builders with shape and dtype inference; `fd.ops` exposes them by nvFuser's names."""

from engine.ops.arith import (
    BINARY_OPS,
    UNARY_OPS,
    binary,
    cast,
    clamp,
    lerp,
    ternary,
    truediv,
    unary,
    where,
)
from engine.ops.reduction import max, min, prod, reduce, sum  # noqa: A004
from engine.ops.shape import broadcast, broadcast_in_dim, segment_set, squeeze
from engine.ops.shape import set_ as set  # noqa: A004 - nvFuser.s op name

globals().update(UNARY_OPS)
globals().update(BINARY_OPS)

__all__ = [
    "binary", "broadcast", "broadcast_in_dim", "cast", "clamp", "lerp", "max", "min", "prod",
    "reduce", "segment_set", "set", "squeeze", "sum", "ternary", "truediv", "unary", "where",
    *UNARY_OPS, *BINARY_OPS,
]
