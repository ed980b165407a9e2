"""One register copy of a global read that a kernel makes twice.

When several of a fusion input's uses each get their own cache (a slice read by several
consumers, a tensor the resize scheduler recomputes per output), the kernel loads the same
elements under the same predicate into two local arrays. A later load statement that is an
earlier one with only its destination renamed is dropped, and its array is read from the
earlier one's: one vector load instead of several, and fewer registers.
"""

from __future__ import annotations

import dataclasses
import re

from engine.lower import kir

_LOAD = re.compile(r"^(load\w*<[^>]*>)\(&(\w+)\[([^\]]*)\], &(\w+)\[(.*)\]\);$")


def _load_lines(stmt: kir.Stmt) -> list[str] | None:
    """The load calls `stmt` is made of (under a guard or an unrolled loop), or None."""
    if isinstance(stmt, kir.Raw):
        lines = [ln.strip() for ln in str(stmt.text).splitlines() if ln.strip()]
        return lines if lines and all(_LOAD.match(ln) for ln in lines) else None
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse:
        parts = [_load_lines(s) for s in stmt.then]
    elif isinstance(stmt, kir.ForLoop) and stmt.kind in ("unroll", "serial", "vectorize"):
        parts = [_load_lines(s) for s in stmt.body]
    else:
        return None
    if not parts or any(p is None for p in parts):
        return None
    return [ln for p in parts for ln in p]  # type: ignore[union-attr]


def _destination(stmt: kir.Stmt, inputs: set[str]) -> str | None:
    """The one local array `stmt`'s loads write, when they all read kernel inputs."""
    lines = _load_lines(stmt)
    if not lines:
        return None
    dests = set()
    for ln in lines:
        m = _LOAD.match(ln)
        assert m is not None
        if m.group(4) not in inputs:
            return None
        dests.add(m.group(2))
    return dests.pop() if len(dests) == 1 else None


def _text(stmt: kir.Stmt) -> str:
    return "\n".join(ln.strip() for ln in stmt.lines(0))


def _written(name: str, stmts: list[kir.Stmt], skip: kir.Stmt) -> bool:
    """Whether any statement but `skip` may write `name` (assigns to it or takes its address)."""
    assign = re.compile(rf"(?<![\w.])&?{name}\[[^\]]*\]\s*(=(?!=)|\+=|-=|\*=|/=)|&{name}\b")
    own = {id(s) for s in _walk([skip])}
    for s in _walk(stmts):
        if id(s) in own or isinstance(s, kir.ForLoop | kir.IfThenElse | kir.Scope):
            continue
        if isinstance(s, kir.Assign):
            if re.match(rf"{name}\b", str(s.lhs)) or assign.search(str(s.rhs)):
                return True
        elif isinstance(s, kir.Raw) and assign.search(str(s.text)):
            return True
    return False


def _walk(stmts: list[kir.Stmt]):
    for s in stmts:
        yield s
        for child in kir.children(s):
            yield from _walk(child)


def _rename(stmt: kir.Stmt, old: str, new: str) -> kir.Stmt:
    pat = re.compile(rf"\b{old}\b")
    changes = {}
    for f in dataclasses.fields(stmt):  # type: ignore[arg-type]
        v = getattr(stmt, f.name)
        if isinstance(v, str | kir.Expr) and f.name not in ("source", "domain"):
            changes[f.name] = pat.sub(new, str(v))
        elif isinstance(v, list):
            changes[f.name] = [_rename(s, old, new) for s in v]
    return dataclasses.replace(stmt, **changes)  # type: ignore[type-var]


def _allocations(stmts: list[kir.Stmt]) -> dict[str, kir.Allocate]:
    return {s.name: s for s in _walk(stmts) if isinstance(s, kir.Allocate) and s.memory == "local"}


def _mentions(name: str, stmts: list[kir.Stmt]) -> int:
    pat = re.compile(rf"\b{name}\b")
    return sum(1 for s in stmts for ln in s.lines(0) if pat.search(ln))


def _merge_once(body: list[kir.Stmt], stmts: list[kir.Stmt], inputs: set[str],
                allocs: dict[str, kir.Allocate]) -> tuple[str, str] | None:
    """Find, in `stmts` or a list nested in it, a load statement that repeats an earlier one
    of its list; rename its array to the earlier one's in the rest of that list (which holds
    every use of it) and drop it. The pair (dropped, kept), or None."""
    seen: dict[str, str] = {}
    for k, s in enumerate(stmts):
        dest = _destination(s, inputs)
        if dest is not None and dest in allocs and not _written(dest, body, s):
            key = _text(_rename(s, dest, "@"))
            first = seen.get(key)
            rest = stmts[k + 1:]
            if (first is not None and allocs[first].ctype == allocs[dest].ctype
                    and allocs[first].size == allocs[dest].size
                    and _mentions(dest, body) == _mentions(dest, [s, *rest, allocs[dest]])):
                stmts[k:] = [_rename(t, dest, first) for t in rest]
                return dest, first
            seen.setdefault(key, dest)
        for child in kir.children(s):
            found = _merge_once(body, child, inputs, allocs)
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
        found = _merge_once(body, body, inputs, allocs)
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
