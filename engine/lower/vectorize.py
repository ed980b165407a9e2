"""Vectorized copies: a loop the schedule marks V around one element copy becomes one access.

The scheduler only vectorizes an inner split by V of a contiguous innermost axis whose
extent V divides (engine.analysis.vectorize), so the copy's elements are adjacent in both
tensors and its predicate holds for all of them or none: the predicate is evaluated at
the vector's first element. Loops that do not fit that shape stay unrolled scalar loops.
"""

from __future__ import annotations

from engine.ir.iterdomain import IterDomain, Split
from engine.lower import kir, kquery
from engine.lower.index import Extents
from engine.lower.kexpr import Access, AddrOf, Call, Expr, Paren, Select, Var
from engine.lower.vector_index import aligned_base, base_access, uniform_cond

# The copy calls this module and the circular-buffer and bulk-copy passes emit.
VECTOR_CALLS = ("loadGeneric", "loadGlobalPrefetchL2", "loadGlobalEvictLast", "fsCpAsync")


def vector_widths(body: list[kir.Stmt]) -> tuple[int, ...]:
    """The widths (in elements) of the vector copies in a kernel body, smallest first; a copy
    of one element is not a vector."""
    widths = {int(st.call.targs[1]) for st in kir.walk(body)
              if isinstance(st, kir.Exec) and isinstance(st.call, Call) and st.call.fn in VECTOR_CALLS}
    return tuple(sorted(widths - {1}))


def _divisible(domain: IterDomain, ext: Extents, width: int) -> bool:
    """`domain` is the inner split of a `width` multiple, and no split before it overhangs:
    only then does the vector's first element's predicate hold for all of it. (fp16 [17]
    split by 32, then the 32 by 8: each 8 divides its split's input, yet the third vector
    starts at element 16 of 17, and would write 7 halves beyond the output.)"""
    t = domain.definition
    return isinstance(t, Split) and t.inner is domain and ext.of(t.in_id) % width == 0 \
        and not _overhangs(t.in_id, ext)


def _overhangs(i: IterDomain, ext: Extents) -> bool:
    """Whether a split among `i`'s ancestors does not divide its input: `i` then counts
    elements beyond the tensor's own."""
    seen: set[int] = set()
    stack = [i]
    while stack:
        d = stack.pop()
        t = d.definition
        if t is None or id(t) in seen:
            continue
        seen.add(id(t))
        if isinstance(t, Split) and ext.of(t.in_id) % ext.value(t.factor):
            return True
        stack.extend(t.inputs)
    return False


def unguard(stmt: kir.Stmt) -> tuple[kir.Stmt, Expr | None]:
    if isinstance(stmt, kir.IfThenElse) and not stmt.orelse and len(stmt.then) == 1:
        return stmt.then[0], stmt.cond
    return stmt, None


def _vector_store(loop: kir.ForLoop, globals_: set[str]) -> list[kir.Stmt] | None:
    """`for v { ...; G[e + v] = x; ... }` -> `tmp[V]; for v { ...; tmp[v] = x; ... } store(G[e], tmp)`:
    values are computed element by element, each global store becomes one vector access.
    A store qualifies only when nothing else in the loop touches its tensor; None when none does."""
    body = list(loop.body)
    decls: list[kir.Stmt] = []
    stores: list[kir.Stmt] = []
    for k, stmt in enumerate(loop.body):
        inner, cond = unguard(stmt)
        if not isinstance(inner, kir.Assign) or inner.copy_ctype is None:
            continue
        dst = base_access(inner.lhs, loop.var)
        if not isinstance(inner.lhs, Access) or inner.lhs.name not in globals_ or dst is None:
            continue
        name = inner.lhs.name
        others = loop.body[:k] + loop.body[k + 1:]
        # The value may not read the tensor either (any name containing it counts).
        if name in kir.words(others) or any(name in w for w in kquery.words(inner.rhs)):
            continue
        tmp = f"{name}_vec"
        body[k] = kir.Assign(Access(tmp, Var(loop.var)), inner.rhs, inner.source)
        decls.append(kir.Declare(inner.copy_ctype, tmp, loop.extent))
        store = kir.Exec(Call("loadGeneric", (inner.copy_ctype, str(loop.extent)), (AddrOf(dst), Var(tmp))))
        pred = None if cond is None else kquery.substitute(cond, loop.var, 0)
        stores.extend(kir.guard([pred] if pred is not None else [], [store]))  # type: ignore[list-item]
    if not stores:
        return None
    return [*decls, kir.ForLoop(loop.var, loop.extent, "unroll", loop.domain, body), *stores]


def vectorize_loop(loop: kir.ForLoop, domain: IterDomain, ext: Extents,
                   globals_: set[str] | None = None, l2_prefetch: dict[str, int] | None = None,
                   l2_evict_last: set[str] | None = None) -> kir.Stmt:
    """The loop as one vector copy (or values then one vector store), or unchanged.
    `l2_prefetch`: global inputs whose vector loads prefetch that many bytes into L2;
    `l2_evict_last`: global inputs whose vector loads keep their L2 lines ahead of others."""
    v = loop.extent
    if v not in (2, 4, 8, 16) or not loop.body or not _divisible(domain, ext, v):
        return loop
    uniform_guards(loop.body, loop.var, v)
    if loop.kind != "vectorize" or len(loop.body) > 1:
        # Not the scheduler's vector: only stores to engine-allocated outputs (aligned,
        # contiguous) may be widened.
        stored = _vector_store(loop, globals_ or set())
        return kir.Scope(stored) if stored is not None else loop
    stmt, cond = unguard(loop.body[0])
    if not isinstance(stmt, kir.Assign) or stmt.copy_ctype is None:
        return loop
    dst, src = base_access(stmt.lhs, loop.var, v), base_access(stmt.rhs, loop.var, v)
    if dst is None or src is None:
        return loop
    prefetch = (l2_prefetch or {}).get(src.name)
    if prefetch:
        fn, targs = "loadGlobalPrefetchL2", (stmt.copy_ctype, str(v), str(prefetch))
    elif src.name in (l2_evict_last or ()):
        fn, targs = "loadGlobalEvictLast", (stmt.copy_ctype, str(v))
    else:
        fn, targs = "loadGeneric", (stmt.copy_ctype, str(v))
    call = kir.Exec(Call(fn, targs, (AddrOf(dst), AddrOf(src))))
    if cond is None:
        return call
    return kir.IfThenElse(kquery.substitute(cond, loop.var, 0), [call])  # type: ignore[arg-type]


def _uniform_selects(e: Expr, var: str, width: int) -> Expr:
    """`e` with each pad select `((c) ? a : b)` whose condition is uniform over the vector
    evaluated at `var` = 0."""
    def fix(n: Expr) -> Expr | None:
        if isinstance(n, Select) and isinstance(n.cond, Paren) and uniform_cond(n.cond, var, width):
            return Select(kquery.substitute(n.cond, var, 0), n.a, n.b)  # type: ignore[arg-type]
        return None
    if not any(isinstance(n, Select) for n in kquery.walk(e)):
        return e
    return kquery.rewrite(e, fix)  # type: ignore[return-value]


def uniform_guards(body: list[kir.Stmt], var: str, width: int) -> None:
    """Guards and selects inside a loop over `var` in [0, width) that hold for all its
    iterations or none (a pad's or slice's bounds, a multiple of the vector apart) are
    evaluated at `var` = 0: one comparison a vector instead of one an element. A guard that
    reads memory, or whose uniformity this cannot show, is left as it is."""
    for st in body:
        if isinstance(st, kir.IfThenElse):
            if uniform_cond(st.cond, var, width):
                st.cond = kquery.substitute(st.cond, var, 0)  # type: ignore[assignment]
            uniform_guards(st.then, var, width)
            uniform_guards(st.orelse, var, width)
        elif isinstance(st, kir.Scope):
            uniform_guards(st.body, var, width)
        elif isinstance(st, kir.Assign):
            st.rhs = _uniform_selects(st.rhs, var, width)


def _written(name: str, stmts: list[kir.Stmt]) -> bool:
    return any(isinstance(s, kir.Assign) and isinstance(s.lhs, Access) and s.lhs.name == name for s in kir.walk(stmts))


def _declared_names(stmts: list[kir.Stmt]) -> set[str]:
    """Index variables a loop body declares (inner loop counters, hoisted indices)."""
    out: set[str] = set()
    for s in kir.walk(stmts):
        if isinstance(s, kir.ForLoop):
            out |= {s.var, f"{s.var}_k"} if s.kind == "block_strided" and s.extent % s.threads == 0 else {s.var}
        elif isinstance(s, kir.IndexDef):
            out.add(s.name)
    return out


def hoist_shared_reads(loop: kir.ForLoop, shared: dict[str, str]) -> list[kir.Stmt]:
    """Reads `S[e + v]` of a shared buffer inside a loop over v become one vector read before
    the loop (S is not written in it, e is a multiple of the width): fewer shared-memory
    instructions and no bank conflicts between threads reading neighbouring runs."""
    v, width = loop.var, loop.extent
    if width not in (2, 4, 8) or loop.kind == "block_strided":
        return [loop]
    inner = _declared_names(loop.body)
    pre: list[kir.Stmt] = []
    for name, ctype in shared.items():
        if _written(name, loop.body):
            continue  # written in the loop
        bases: set[int | Expr] = set()
        for s in kir.walk(loop.body):
            for e in kir.exprs(s):
                for a in kquery.accesses(e):
                    base = kquery.without_last_var(a.index, v) if a.name == name else None
                    if base is not None and not kquery.reads_memory(a.index):
                        bases.add(base)
        if len(bases) != 1:
            continue
        base, = bases
        if kquery.names(base) & {v, *inner}:
            continue  # the base moves inside the loop: it cannot be read before it
        if not aligned_base(base, width) or width * element_size(ctype) > 16:
            continue
        vec = f"{name}_r{v}"
        pre += [kir.Declare(ctype, vec, width),
                kir.Exec(Call("loadGeneric", (ctype, str(width)), (Var(vec), AddrOf(Access(name, base)))))]
        _rename(loop.body, name, v, base, Access(vec, Var(v)))
    return pre + [loop] if pre else [loop]


def element_size(ctype: str) -> int:
    return {"double": 8, "int64_t": 8, "float": 4, "int": 4, "__half": 2, "__bfloat": 2}.get(ctype, 1)


def _rename(body: list[kir.Stmt], name: str, var: str, base: int | Expr, new: Access) -> None:
    """Reads of `name[base + var]` in values and calls become `new`."""
    def swap(n: Expr) -> Expr | None:
        if isinstance(n, Access) and n.name == name and kquery.without_last_var(n.index, var) == base:
            return new
        return None
    for st in kir.walk(body):
        if isinstance(st, kir.Assign | kir.AddTo):
            st.rhs = kquery.rewrite(st.rhs, swap)  # type: ignore[assignment]
        elif isinstance(st, kir.ScalarDef):
            st.value = kquery.rewrite(st.value, swap)  # type: ignore[assignment]
        elif isinstance(st, kir.Local) and st.init is not None:
            st.init = kquery.rewrite(st.init, swap)  # type: ignore[assignment]
        elif isinstance(st, kir.Exec):
            st.call = kquery.rewrite(st.call, swap)  # type: ignore[assignment]

