"""One register copy of a global read that a kernel makes twice.

When several of a fusion input's uses each get their own cache (a slice read by several
consumers, a tensor the resize scheduler recomputes per output), the kernel loads the same
elements under the same predicate into two local arrays. A later load statement that is an
earlier one with only its destination renamed is dropped, and its array is read from the
earlier one's: one vector load instead of several, and fewer registers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from engine.lower import kir, kquery
from engine.lower.kexpr import Access, AddrOf, Call, Expr, Var


def _load(stmt: kir.Stmt) -> Call | None:
    """`load...<..>(&A[i], &B[j]);` (A's index reading no memory), else None."""
    call = stmt.call if isinstance(stmt, kir.Exec) else None
    if not (isinstance(call, Call) and call.fn.startswith("load") and len(call.args) == 2):
        return None
    dst, src = call.args
    if not all(isinstance(a, AddrOf) and isinstance(a.x, Access) for a in (dst, src)):
        return None
    return None if kquery.reads_memory(dst.x.index) else call  # type: ignore[union-attr]


def _loads(stmt: kir.Stmt) -> list[Call] | None:
    """The load calls `stmt` is made of (under a guard or an unrolled loop), or None."""
    if isinstance(stmt, kir.Exec):
        call = _load(stmt)
        return [call] if call is not None else None
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse:
        parts = [_loads(s) for s in stmt.then]
    elif isinstance(stmt, kir.ForLoop) and stmt.kind in ("unroll", "serial", "vectorize"):
        parts = [_loads(s) for s in stmt.body]
    else:
        return None
    if not parts or any(p is None for p in parts):
        return None
    return [c for p in parts for c in p]  # type: ignore[union-attr]


def _array(x: int | Expr) -> str:
    return x.x.name if isinstance(x, AddrOf) and isinstance(x.x, Access) else ""


def _destination(stmt: kir.Stmt, inputs: set[str]) -> str | None:
    """The one local array `stmt`'s loads write, when they all read kernel inputs."""
    calls = _loads(stmt)
    if not calls:
        return None
    if any(_array(c.args[1]) not in inputs for c in calls):
        return None
    dests = {_array(c.args[0]) for c in calls}
    return dests.pop() if len(dests) == 1 else None


def _key(stmt: kir.Stmt) -> tuple[tuple[object, ...], ...]:
    return kir.signature([stmt])


def _stored_into(e: Expr) -> Iterator[str]:
    """The arrays and variables `e` takes the address of."""
    for n in kquery.walk(e):
        if isinstance(n, AddrOf) and isinstance(n.x, Access | Var):
            yield n.x.name


def _writers(stmts: list[kir.Stmt]) -> dict[str, list[int]]:
    """Per array or variable, the ids of the statements that may write it (assign to it or
    take its address)."""
    out: dict[str, list[int]] = {}
    for s in _walk(stmts):
        if isinstance(s, kir.ForLoop | kir.IfThenElse | kir.Scope):
            continue
        names: list[str] = []
        if isinstance(s, kir.Assign | kir.AddTo):
            if isinstance(s.lhs, Access | Var):
                names.append(s.lhs.name)
            names.extend(_stored_into(s.rhs))
        elif isinstance(s, kir.Exec):
            for e in kir.exprs(s):
                names.extend(_stored_into(e))
        for name in dict.fromkeys(names):
            out.setdefault(name, []).append(id(s))
    return out


def _written(name: str, writers: dict[str, list[int]], skip: kir.Stmt) -> bool:
    """Whether any statement but `skip` (and those nested in it) may write `name`."""
    found = writers.get(name)
    if not found:
        return False
    own = {id(s) for s in _walk([skip])}
    return any(w not in own for w in found)


def _walk(stmts: list[kir.Stmt]) -> Iterator[kir.Stmt]:
    for s in stmts:
        yield s
        for child in kir.children(s):
            yield from _walk(child)


def _rename(stmt: kir.Stmt, old: str, new: str) -> kir.Stmt:
    """`stmt` with the array (or variable) `old` named `new`."""
    def swap(n: Expr) -> Expr | None:
        if isinstance(n, Access) and n.name == old:
            return Access(new, n.index)
        return Var(new) if isinstance(n, Var) and n.name == old else None
    changes = {}
    for f in dataclasses.fields(stmt):  # type: ignore[arg-type]
        v = getattr(stmt, f.name)
        if isinstance(v, Expr):
            if old in kquery.names(v):
                changes[f.name] = kquery.rewrite(v, swap)
        elif isinstance(v, str) and v == old and f.name not in ("source", "domain"):
            changes[f.name] = new
        elif isinstance(v, list):
            changes[f.name] = [_rename(s, old, new) for s in v]
    return dataclasses.replace(stmt, **changes)  # type: ignore[type-var]


def _allocations(stmts: list[kir.Stmt]) -> dict[str, kir.Allocate]:
    return {s.name: s for s in _walk(stmts) if isinstance(s, kir.Allocate) and s.memory == "local"}


def _mentions(name: str, stmts: list[kir.Stmt]) -> int:
    """How many statements (nested ones counted apart) name `name` themselves."""
    return sum(1 for s in _walk(stmts) if kir.mentions(s, name))


def _merge_once(body: list[kir.Stmt], stmts: list[kir.Stmt], inputs: set[str],
                allocs: dict[str, kir.Allocate], writers: dict[str, list[int]]) -> tuple[str, str] | None:
    """Find, in `stmts` or a list nested in it, a load statement that repeats an earlier one
    of its list; rename its array to the earlier one's in the rest of that list (which holds
    every use of it) and drop it. The pair (dropped, kept), or None."""
    seen: dict[tuple[tuple[object, ...], ...], str] = {}
    for k, s in enumerate(stmts):
        dest = _destination(s, inputs)
        if dest is not None and dest in allocs and not _written(dest, writers, s):
            key = _key(_rename(s, dest, "@"))
            first = seen.get(key)
            rest = stmts[k + 1:]
            if (first is not None and allocs[first].ctype == allocs[dest].ctype
                    and allocs[first].size == allocs[dest].size
                    and _mentions(dest, body) == _mentions(dest, [s, *rest, allocs[dest]])):
                stmts[k:] = [_rename(t, dest, first) for t in rest]
                return dest, first
            seen.setdefault(key, dest)
        for child in kir.children(s):
            found = _merge_once(body, child, inputs, allocs, writers)
            if found is not None:
                return found
    return None


def share_loads(body: list[kir.Stmt], inputs: set[str]) -> tuple[list[kir.Stmt], list[str]]:
    """`body` with repeated input loads dropped; notes name each array read from another.
    `inputs`: the kernel's read-only global tensors."""
    body = list(body)
    notes = []
    while True:
        allocs = _allocations(body)
        found = _merge_once(body, body, inputs, allocs, _writers(body))
        if found is None:
            return body, notes
        dest, first = found
        body = _drop_allocations(body, {dest})
        notes.append(f"{dest}: the same loads as {first}, read from it")


def _drop_allocations(stmts: list[kir.Stmt], names: set[str]) -> list[kir.Stmt]:
    out = []
    for s in stmts:
        if isinstance(s, kir.Allocate) and s.name in names:
            continue
        for child in kir.children(s):
            child[:] = _drop_allocations(child, names)
        out.append(s)
    return out
