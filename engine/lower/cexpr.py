"""Index arithmetic on typed expressions (engine.lower.kexpr), folding constants.

A name given as a string (a loop variable, `threadIdx.x`) becomes a kexpr.Var.
"""

from __future__ import annotations

from engine.lower import kexpr
from engine.lower.kexpr import Add, Div, Expr, Mod, Mul, Signed, Sub, Var, Xor

Term = int | Expr


def _lift(x: int | str | Expr) -> Term:
    return Var(x) if isinstance(x, str) else x


def _signed(a: Term) -> Term:
    """CUDA's thread and block indices are unsigned, and so is arithmetic on them: a term made
    of them is cast to the signed index type before a subtraction, which may go below zero
    (a bounds test `x - 7 >= 0` would otherwise always hold)."""
    if isinstance(a, Expr) and _unsigned(a):
        return Signed(a)
    return a


def _unsigned(x: Term) -> bool:
    if isinstance(x, Signed):
        return False
    if isinstance(x, Var | kexpr.Lit):
        name = x.name if isinstance(x, Var) else x.text
        return "threadIdx" in name or "blockIdx" in name
    return isinstance(x, Expr) and any(_unsigned(c) for c in x.children())


def add(a: int | str | Expr, b: int | str | Expr) -> Term:
    a, b = _lift(a), _lift(b)
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    if isinstance(b, int) and isinstance(a, Add | Sub) and isinstance(a.b, int):
        # (x + c) + b: one constant, x + (c + b)
        return add(a.a, (a.b if isinstance(a, Add) else -a.b) + b)
    if isinstance(b, int) and b < 0:
        return Sub(_signed(a), -b)
    return Add(a, b)


def sub(a: int | str | Expr, b: int | str | Expr) -> Term:
    a, b = _lift(a), _lift(b)
    if isinstance(b, int):
        return add(a, -b)
    return Sub(_signed(a), b)


def mul(a: int | str | Expr, b: int | str | Expr) -> Term:
    a, b = _lift(a), _lift(b)
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return Mul(a, b)


def div(a: int | str | Expr, b: int) -> Term:
    a = _lift(a)
    if isinstance(a, int):
        return a // b
    if b == 1:
        return a
    return Div(a, b)


def mod(a: int | str | Expr, b: int) -> Term:
    a = _lift(a)
    if isinstance(a, int):
        return a % b
    if b == 1:
        return 0
    return Mod(a, b)


def xor(a: int | str | Expr, b: int | str | Expr) -> Term:
    """a ^ b, parenthesised whole: C's ^ binds looser than every arithmetic operator."""
    a, b = _lift(a), _lift(b)
    if isinstance(a, int) and isinstance(b, int):
        return a ^ b
    if a == 0:
        return b
    if b == 0:
        return a
    return Xor(a, b)
