"""Vectorized copies: a loop the schedule marks V around one element copy becomes one access.

The scheduler only vectorizes an inner split by V of a contiguous innermost axis whose
extent V divides (engine.analysis.vectorize), so the copy's elements are adjacent in both
tensors and its predicate holds for all of them or none: the predicate is evaluated at
the vector's first element. Loops that do not fit that shape stay unrolled scalar loops.
"""

from __future__ import annotations

import re

from engine.ir.iterdomain import IterDomain, Split
from engine.lower import kir
from engine.lower.index import Extents

_ACCESS = re.compile(r"^(\w+)\[(.*)\]$")


def _base(access: str, var: str) -> str | None:
    """`T3[e + var]` -> `T3[e]` when `var` is the last term, with coefficient 1, and only there."""
    m = _ACCESS.match(access)
    if m is None or len(re.findall(rf"\b{var}\b", access)) != 1:
        return None
    name, index = m.groups()
    if index == var:
        return f"{name}[0]"
    if index.endswith(f" + {var}"):
        return f"{name}[{index[: -len(var) - 3]}]"
    return None


def _divisible(domain: IterDomain, ext: Extents, width: int) -> bool:
    t = domain.definition
    return isinstance(t, Split) and t.inner is domain and ext.of(t.in_id) % width == 0


def vectorize_loop(loop: kir.ForLoop, domain: IterDomain, ext: Extents) -> kir.Stmt:
    """The loop as one vector copy, or unchanged."""
    v = loop.extent
    if v not in (2, 4, 8, 16) or len(loop.body) != 1 or not _divisible(domain, ext, v):
        return loop
    stmt, cond = loop.body[0], None
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse and len(stmt.then) == 1:
        cond, stmt = stmt.cond, stmt.then[0]
    if not isinstance(stmt, kir.Assign) or stmt.copy_ctype is None:
        return loop
    dst, src = _base(stmt.lhs, loop.var), _base(stmt.rhs, loop.var)
    if dst is None or src is None:
        return loop
    call = kir.Raw(f"loadGeneric<{stmt.copy_ctype}, {v}>(&{dst}, &{src});")
    if cond is None:
        return call
    return kir.IfThenElse(re.sub(rf"\b{loop.var}\b", "0", cond), [call])
