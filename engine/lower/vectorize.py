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


def _unguard(stmt: kir.Stmt) -> tuple[kir.Stmt, str | None]:
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse and len(stmt.then) == 1:
        return stmt.then[0], stmt.cond
    return stmt, None


def _vector_store(loop: kir.ForLoop, globals_: set[str]) -> list[kir.Stmt] | None:
    """`for v { ...; G[e + v] = x; }` -> `tmp[V]; for v { ...; tmp[v] = x; } store(G[e], tmp)`:
    the values are computed element by element, the global store is one vector access."""
    last, cond = _unguard(loop.body[-1])
    if not isinstance(last, kir.Assign) or last.copy_ctype is None:
        return None
    m = _ACCESS.match(last.lhs)
    dst = _base(last.lhs, loop.var)
    if m is None or m.group(1) not in globals_ or dst is None or loop.var in last.rhs and len(loop.body) == 1:
        return None
    tmp = f"{m.group(1)}_vec"
    body = loop.body[:-1] + [kir.Assign(f"{tmp}[{loop.var}]", last.rhs, last.source)]
    inner = kir.ForLoop(loop.var, loop.extent, "unroll", loop.domain, body)
    store = kir.Raw(f"loadGeneric<{last.copy_ctype}, {loop.extent}>(&{dst}, {tmp});")
    guarded: kir.Stmt = store if cond is None else kir.IfThenElse(re.sub(rf"\b{loop.var}\b", "0", cond), [store])
    return [kir.Raw(f"alignas(16) {last.copy_ctype} {tmp}[{loop.extent}];"), inner, guarded]


def vectorize_loop(loop: kir.ForLoop, domain: IterDomain, ext: Extents,
                   globals_: set[str] | None = None) -> kir.Stmt:
    """The loop as one vector copy (or values then one vector store), or unchanged."""
    v = loop.extent
    if v not in (2, 4, 8, 16) or not loop.body or not _divisible(domain, ext, v):
        return loop
    if len(loop.body) > 1:
        stored = _vector_store(loop, globals_ or set())
        return kir.Scope(stored) if stored is not None else loop
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
