"""Queries and rewrites on typed kernel-IR expressions (engine.lower.kexpr).

The passes after lowering ask these instead of reading C text: which accesses an
expression makes, whether it names a variable or array, the expression with a variable
replaced, the top-level terms of a sum as C would print them. How a node groups in C (a
sum, an atom, a minus sign in it) is said here once, for these queries and for
engine.codegen.expressions, which parenthesises by it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace

from engine.lower.kexpr import (
    Access,
    Add,
    And,
    Arith,
    Call,
    CCast,
    Cmp,
    Div,
    Expr,
    Lit,
    Mod,
    Mul,
    Paren,
    PtrCast,
    StaticCast,
    Stride,
    Sub,
    Var,
)

Node = int | Expr


def binary(x: Node) -> bool:
    """Whether `x` prints with a binary operator outside parentheses."""
    return isinstance(x, Add | Sub | Mul | Div | Mod | Cmp | And)


def is_sum(x: Node) -> bool:
    """`x` prints as a sum or difference at its top level."""
    return isinstance(x, Add | Sub | Cmp | And)


def is_atom(x: Node) -> bool:
    """`x` prints with no operator outside parentheses (a negative constant has its sign)."""
    return x >= 0 if isinstance(x, int) else not binary(x)


def has_minus(x: Node) -> bool:
    """Whether `x` prints a minus sign: a negative constant, a difference (a scalar one too),
    or one in the C text of a Lit. A typed op (kexpr.Spelled) is asked through its operands: its
    own spelling is codegen's (whose renderer adds the minus signs of that spelling)."""
    if isinstance(x, int):
        return x < 0
    if isinstance(x, Sub) or isinstance(x, Arith) and x.op == "sub":
        return True
    if isinstance(x, Lit):
        return "-" in x.text
    return any(has_minus(c) for c in x.children())


def walk(e: Node) -> Iterator[Expr]:
    """Every node of `e`, parents first (depth first, children in order)."""
    if not isinstance(e, Expr):
        return
    stack: list[Expr] = [e]
    while stack:
        n = stack.pop()
        yield n
        kids = n.children()
        for c in reversed(kids):
            if isinstance(c, Expr):
                stack.append(c)


def accesses(e: Node) -> Iterator[Access]:
    return (n for n in walk(e) if isinstance(n, Access))


def names(e: Node) -> set[str]:
    """The variables, arrays and tensors `e` names."""
    out: set[str] = set()
    for n in walk(e):
        if isinstance(n, Var):
            out.add(n.name)
        elif isinstance(n, Access):
            out.add(n.name)
        elif isinstance(n, Stride):
            out.add(n.tensor)
    return out


def words(e: Node) -> set[str]:
    """Every name `e` prints: names() with the words of its opaque parts (a Lit's text, a
    call's function and template arguments, a cast's type). A typed op (kexpr.Spelled)
    adds only its operands' names: its spelling names no array or variable."""
    out: set[str] = set()
    for n in walk(e):
        if isinstance(n, Var):
            out |= text_words(n.name)
        elif isinstance(n, Access):
            out |= text_words(n.name) if "." in n.name else {n.name}  # `T3.data[..]`: T3, data
        elif isinstance(n, Stride):
            out |= {n.tensor, "alloc_stride"}
        elif isinstance(n, Lit):
            out |= text_words(n.text)
        elif isinstance(n, Call):
            out |= text_words(" ".join([n.fn, *n.targs]))
        elif isinstance(n, CCast | StaticCast | PtrCast):
            out |= text_words(n.ctype)
    return out


def text_words(text: str) -> set[str]:
    """The identifiers and numbers in opaque C text (maximal runs of letters, digits, `_`)."""
    out: set[str] = set()
    run: list[str] = []
    for ch in text + " ":
        if ch.isalnum() or ch == "_":
            run.append(ch)
        elif run:
            out.add("".join(run))
            run = []
    return out


def mentions(e: Node, name: str) -> bool:
    """Whether `e` names `name` (as a variable, array or tensor, or in an opaque part)."""
    return name in names(e) or name in words(e)


def conjuncts(e: Node) -> list[Node]:
    """The terms of `e` as a conjunction (`a && b && c`: a, b, c; anything else: itself)."""
    if isinstance(e, And):
        return [t for term in e.terms for t in conjuncts(term)]
    return [e]


def count_var(e: Node, name: str) -> int:
    return sum(1 for n in walk(e) if isinstance(n, Var) and n.name == name)


def reads_memory(e: Node) -> bool:
    """Whether `e` reads an array element or a tensor's stride (an Access or Stride, or a Lit's
    text with a `[`; a typed op or a call reads memory only through its operands)."""
    return any(isinstance(n, Access | Stride) or isinstance(n, Lit) and "[" in n.text for n in walk(e))


def rewrite(e: Node, fn: Callable[[Expr], Node | None]) -> Node:
    """`e` rebuilt bottom-up, each node replaced by `fn(node)` where that is not None.
    Constants are not folded again: the result renders as the text with the same
    replacement would."""
    if not isinstance(e, Expr):
        return e
    changes = {}
    for name in _field_names(type(e)):
        v = getattr(e, name)
        if isinstance(v, Expr):
            new = rewrite(v, fn)
            if new is not v:
                changes[name] = new
        elif isinstance(v, tuple) and any(isinstance(x, Expr) for x in v):
            new_t = tuple(rewrite(x, fn) for x in v)
            if any(a is not b for a, b in zip(new_t, v)):
                changes[name] = new_t
    out = replace(e, **changes) if changes else e  # type: ignore[type-var]
    got = fn(out)
    return out if got is None else got


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    got = _FIELDS.get(cls)
    if got is None:
        got = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return got


def substitute(e: Node, var: str, value: Node) -> Node:
    """`e` with the variable `var` replaced by `value`."""
    if not any(isinstance(n, Var) and n.name == var for n in walk(e)):
        return e
    return rewrite(e, lambda n: value if isinstance(n, Var) and n.name == var else None)


def strip_parens(e: Node) -> Node:
    """`e` without Paren nodes around all of it."""
    while isinstance(e, Paren):
        e = e.x
    return e


def plus_terms(e: Node) -> list[tuple[Node, bool]]:
    """The terms C prints `e` as, cut at the ` + ` outside parentheses, each with whether it
    prints in parentheses of its own. A difference at the top level stays one term with
    the term before it (`a + b - 3` is `a` and `b - 3`)."""
    if isinstance(e, Add):
        left = plus_terms(e.a)
        if is_sum(e.b) and has_minus(e.b):
            return [*left, (e.b, True)]
        return [*left, *plus_terms(e.b)]
    if isinstance(e, Sub):
        left = plus_terms(e.a)
        last, _ = left[-1]
        return [*left[:-1], (Sub(last, e.b), False)]
    return [(e, False)]


def signed_terms(e: Node) -> list[tuple[str, Node]]:
    """The terms C prints `e` as, cut at the ` + ` and ` - ` outside parentheses, each with
    the operator before it ("" for the first)."""
    if isinstance(e, Add):
        left = signed_terms(e.a)
        if is_sum(e.b) and has_minus(e.b):
            return [*left, ("+", e.b)]
        right = signed_terms(e.b)
        return [*left, ("+", right[0][1]), *right[1:]]
    if isinstance(e, Sub):
        return [*signed_terms(e.a), ("-", e.b)]
    return [("", e)]


def without_last_var(e: Node, var: str) -> Node | None:
    """`e` printed as `x + var`: x; else None."""
    if isinstance(e, Add) and not (is_sum(e.b) and has_minus(e.b)):
        if e.b == Var(var):
            return e.a
        rest = without_last_var(e.b, var)
        if rest is not None:
            return Add(e.a, rest)
    return None


def replace_text(e: Node, old: str, new: str) -> Node:
    """`e` with `old` replaced by `new` in its variables' names and its Lits' text."""
    def swap(n: Expr) -> Expr | None:
        if isinstance(n, Var) and old in n.name:
            return Var(n.name.replace(old, new))
        if isinstance(n, Lit) and old in n.text:
            return Lit(n.text.replace(old, new))
        return None
    return rewrite(e, swap)
