"""Block-wide copies into shared memory widened to 16-byte vectors (a bulk axis: the block's
threads share the iterations of a plain copy, which a barrier follows). Each thread copies
runs of V consecutive elements; the global operand's compiled-for strides and alignment must
allow them."""

from __future__ import annotations

from engine.lower import kir, kquery
from engine.lower.kexpr import Access, Add, AddrOf, Call, Cmp, Expr, Mul, Paren, Stride, Sub, Var
from engine.lower.vector_index import base_access, conjuncts
from engine.lower.vectorize import element_size, unguard


def _last_product(t: int | Expr) -> int | Expr:
    """The factor a term prints last: `b` of a top-level `a - b` (repeatedly)."""
    while isinstance(t, Sub) and not isinstance(t.b, Sub):
        t = t.b
    return t


def _multiple_of(index: int | Expr, width: int, layouts: dict[str, tuple[list[int], int]]) -> bool:
    """Every term is a multiple of `width`: `(..) * k`, a constant, or `(..) * T.alloc_stride[j]`
    with the compiled-for stride a multiple."""
    for t, paren in kquery.plus_terms(index):
        if isinstance(t, int) and t >= 0:
            if t % width:
                return False
            continue
        last = t if paren else _last_product(t)
        factor = last.b if isinstance(last, Mul) and not paren else None
        if isinstance(factor, int) and factor >= 0 and factor % width == 0:
            continue
        if not isinstance(factor, Stride) or factor.tensor not in layouts:
            return False
        strides, _align = layouts[factor.tensor]
        if strides[factor.dim] % width:
            return False
    return True


def widen_bulk_copy(var: str, extent: int, body: list[kir.Stmt], threads: int,
                    layouts: dict[str, tuple[list[int], int]], ctypes: dict[str, str]) -> kir.Stmt | None:
    """A block-strided copy `S[a + i] = G[b + i]` as 16-byte vectors: each thread copies runs of
    V consecutive elements. Needs both bases and the extent to divide into whole vectors, and
    the global operand's compiled-for strides and pointer alignment to allow them; when the
    vectors do not divide among the threads, the last trip is guarded."""
    if len(body) != 1:
        return None
    stmt, cond = unguard(body[0])
    if not isinstance(stmt, kir.Assign) or stmt.copy_ctype is None or (cond is not None and kquery.mentions(cond, var)):
        return None
    width = 16 // max(element_size(stmt.copy_ctype), 1)
    if width < 2 or extent % width:
        return None
    dst, src = base_access(stmt.lhs, var), base_access(stmt.rhs, var)
    if dst is None or src is None:
        return None
    for access in (dst, src):
        if access.name in layouts and layouts[access.name][1] < 16:
            return None
        if not _multiple_of(access.index, width, layouts):
            return None
    vectors = extent // width
    trips = -(-vectors // threads)
    at = [AddrOf(Access(a.name, Add(a.index, Var(var)))) for a in (dst, src)]
    call: kir.Stmt = kir.Exec(Call("loadGeneric", (stmt.copy_ctype, str(width)), tuple(at)))
    if vectors % threads:  # the last trip has vectors for some threads only
        call = kir.IfThenElse(Cmp(Var(var), "<", extent), [call])
    loop = kir.ForLoop(f"{var}_k", trips, "unroll", f"{var} in vectors of {width}",
                       [kir.IndexDef(var, Mul(Paren(Add(kir.TID, Mul(Var(f"{var}_k"), threads))), width)), call])
    return kir.Scope(kir.guard(list(conjuncts(cond)), [loop])) if cond is not None else loop
