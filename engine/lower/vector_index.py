"""Index facts the vector passes need, read from typed expressions (engine.lower.kexpr):
whether an access steps by one along a loop variable, whether a term is a multiple of the
vector width, whether a guard holds for all of a vector's elements or none."""

from __future__ import annotations

from engine.lower import kquery
from engine.lower.kexpr import Access, Add, And, Cmp, Expr, Mul, Paren, Signed, Stride, Sub, Var
from engine.lower.kquery import is_atom

Node = int | Expr


def base_access(access: Expr, var: str, width: int = 0) -> Access | None:
    """`T3[e + var]` -> `T3[e]` when `var` is a term of its own, with coefficient 1, and only
    there. A slice's or pad's shift may follow it (`e + var + 64`, or a term
    `(((nvfuser_index_t)(e + var)) - 64)`) when the shift is a multiple of `width` (given
    by callers whose guard is uniform over the vector): the vector starts at `e` shifted,
    still aligned."""
    if not isinstance(access, Access) or kquery.count_var(access, var) != 1:
        return None
    name, index = access.name, access.index
    if index == Var(var):
        return Access(name, 0)
    base = kquery.without_last_var(index, var)
    if base is not None:
        return Access(name, base)
    terms = kquery.plus_terms(index)
    with_var = [(t, paren) for t, paren in terms if kquery.mentions(t, var)]
    shift = _shift(with_var[0], var) if with_var else None
    if width == 0 or (with_var != [(Var(var), False)] and shift is None):
        return _summed_access(access, var, width) if width else None
    shifts = [t for t, _ in terms if isinstance(t, int) and t >= 0] + ([shift] if shift is not None else [])
    if any(k % width for k in shifts):
        return None
    return Access(name, kquery.substitute(index, var, 0))


def _addends(e: Node, sign: int = 1) -> list[tuple[int, Node]]:
    """`e` as a sum of signed addends, through nested sums, differences and parentheses."""
    if isinstance(e, Paren):
        return _addends(e.x, sign)
    if isinstance(e, Add):
        return _addends(e.a, sign) + _addends(e.b, sign)
    if isinstance(e, Sub):
        return _addends(e.a, sign) + _addends(e.b, -sign)
    return [(sign, e)]


def _summed_access(access: Access, var: str, width: int) -> Access | None:
    """`T[... + (a * 4 + var - 48)]` -> `T[... + (a * 4 + 0 - 48)]`: `var` an addend of its
    own, added once with coefficient 1 in the index read as one sum, and every other addend
    a multiple of `width`: a constant, a product by one, or a product by a runtime stride
    (whose multiples the vectorization analysis checked)."""
    parts = _addends(access.index)
    if [p for p in parts if kquery.mentions(p[1], var)] != [(1, Var(var))]:
        return None
    for _, t in parts:
        if t == Var(var) or is_multiple(t, width):
            continue
        t = kquery.strip_parens(t)
        if not (isinstance(t, Mul) and isinstance(t.b, Stride)):
            return None
    return Access(access.name, kquery.substitute(access.index, var, 0))


def _shift(term: tuple[Node, bool], var: str) -> int | None:
    """K for a parenthesised term `(((nvfuser_index_t)(e + var)) - K)`, else None."""
    t, paren = term
    if not (paren and isinstance(t, Sub) and isinstance(t.b, int) and t.b >= 0 and isinstance(t.a, Signed)):
        return None
    return t.b if kquery.without_last_var(t.a.x, var) is not None else None


def aligned_base(index: Node, width: int) -> bool:
    """Every term of the sum `index` is a multiple of `width` (`(..) * k` or a constant)."""
    return all(is_multiple(t, width) for t, _ in kquery.plus_terms(index))


def is_multiple(term: Node, width: int) -> bool:
    """A literal multiple of `width`, or a chain of * / % whose last step multiplies by one."""
    term = kquery.strip_parens(term)
    if isinstance(term, int):
        return term >= 0 and term % width == 0
    return isinstance(term, Mul) and isinstance(term.b, int) and term.b >= 0 and term.b % width == 0


def _offset_of(expr: Node, var: str, width: int) -> bool:
    """`expr` is `var` plus terms that are multiples of `width` (a cast of such a sum too)."""
    expr = kquery.strip_parens(expr)
    if isinstance(expr, Signed) and not is_atom(expr.x):
        expr = expr.x  # a cast of a sum to the signed index type
    parts = kquery.signed_terms(expr)
    with_var = [(sep, t) for sep, t in parts if kquery.mentions(t, var)]
    if len(with_var) != 1 or with_var[0][0] == "-":
        return False
    inner = kquery.strip_parens(with_var[0][1])
    if inner != Var(var) and (inner == expr or not _offset_of(inner, var, width)):
        return False
    return all(is_multiple(t, width) for sep, t in parts if (sep, t) != with_var[0])


def uniform_atom(atom: Node, var: str, width: int) -> bool:
    """Whether the comparison `atom` has one value for every `var` in [0, width): `L < N` or
    `L >= N` where L is `var` plus multiples of `width` and N is one too. (With L = k*w + v
    and N = n*w, k*w + v < n*w holds for every v in [0, w) exactly when k < n; `<=` and `>`
    would change at v = 0.)"""
    atom = _strip(atom)
    if not (isinstance(atom, Cmp) and atom.op in ("<", ">=") and isinstance(atom.rhs, int) and atom.rhs >= 0):
        return False
    return atom.rhs % width == 0 and _offset_of(atom.lhs, var, width)


def _strip(e: Node) -> Node:
    """`e` without enclosing parentheses, a conjunction of one term as that term."""
    while isinstance(e, Paren) or isinstance(e, And) and len(e.terms) == 1:
        e = e.x if isinstance(e, Paren) else e.terms[0]
    return e


def conjuncts(cond: Expr) -> tuple[Expr, ...]:
    """The comparisons of a conjunction, through nested conjunctions and their parentheses."""
    cond = _strip(cond)  # type: ignore[assignment]
    if isinstance(cond, And):
        return tuple(t for term in cond.terms for t in conjuncts(term))
    return (cond,)


def uniform_cond(cond: Expr, var: str, width: int) -> bool:
    """A conjunction whose every comparison naming `var` is uniform over the vector (and
    that reads no memory)."""
    moving = [a for a in conjuncts(cond) if kquery.mentions(a, var)]
    return bool(moving) and not kquery.reads_memory(cond) and all(uniform_atom(a, var, width) for a in moving)
