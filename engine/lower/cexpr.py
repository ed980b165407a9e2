"""Index arithmetic as C text, folding constants and parenthesising only where C needs it."""

from __future__ import annotations

Term = int | str


def _top_ops(s: str) -> set[str]:
    """Binary operators at parenthesis depth 0 (a leading minus sign is not one)."""
    ops: set[str] = set()
    depth = 0
    for k, ch in enumerate(s):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in "+-*/%?<>=&|" and k > 0:
            ops.add(ch)
    return ops


def _is_sum(x: Term) -> bool:
    return isinstance(x, str) and bool(_top_ops(x) - {"*", "/", "%"})


def _is_atom(x: Term) -> bool:
    return isinstance(x, int) and x >= 0 or isinstance(x, str) and not _top_ops(x)


def _p(x: Term, need: bool) -> str:
    return f"({x})" if need else str(x)


def _signed(a: Term) -> Term:
    """CUDA's thread and block indices are unsigned, and so is arithmetic on them: a term made
    of them is cast to the signed index type before a subtraction, which may go below zero
    (a bounds test `x - 7 >= 0` would otherwise always hold)."""
    if isinstance(a, str) and ("threadIdx" in a or "blockIdx" in a):
        return f"((nvfuser_index_t)({a}))" if _top_ops(a) else f"((nvfuser_index_t){a})"
    return a


def add(a: Term, b: Term) -> Term:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    if isinstance(b, int) and b < 0:
        return f"{_signed(a)} - {-b}"
    return f"{a} + {_p(b, _is_sum(b) and '-' in str(b))}"


def sub(a: Term, b: Term) -> Term:
    if isinstance(b, int):
        return add(a, -b)
    return f"{_signed(a)} - {_p(b, _is_sum(b))}"


def mul(a: Term, b: Term) -> Term:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return f"{_p(a, _is_sum(a) or isinstance(a, int) and a < 0)} * {_p(b, not _is_atom(b))}"


def div(a: Term, b: int) -> Term:
    if isinstance(a, int):
        return a // b
    if b == 1:
        return a
    return f"{_p(a, _is_sum(a))} / {b}"


def mod(a: Term, b: int) -> Term:
    if isinstance(a, int):
        return a % b
    if b == 1:
        return 0
    return f"{_p(a, _is_sum(a))} % {b}"


def xor(a: Term, b: Term) -> Term:
    """a ^ b, parenthesised whole: C's ^ binds looser than every arithmetic operator."""
    if isinstance(a, int) and isinstance(b, int):
        return a ^ b
    if a == 0:
        return b
    if b == 0:
        return a
    return f"({a} ^ {b})"


def text(x: Term) -> str:
    return str(x)
