"""Kernel-IR expressions (engine.lower.kexpr) as C: the one place their text is written.

`render(node)` gives a node's C, with parentheses only where C needs them: a node's own
follow from the classes of its operands (engine.lower.kquery's `is_sum`, `is_atom`,
`binary`: a sum as an operand of a product is parenthesised, ...), so rendering needs no
look at the operands' text, but for one rule: a sum added to another is parenthesised where
it prints a minus sign. The fusion's typed ops (engine.lower.kops) are spelled from
ops_table here; an op or dtype the table cannot spell raises its CompileError, naming the
op, when the kernel is rendered. The names lowering gives (a Lit's text, a Call's function and
template arguments, a cast's type) are written as they are.

A node never changes (frozen): its text is rendered once and kept on the node, outside its
fields (equality and hashing do not see it).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.codegen import ops_table
from engine.lower import kops
from engine.lower.kexpr import (
    Access,
    Add,
    AddrOf,
    And,
    Arith,
    Call,
    CCast,
    Cmp,
    Deref,
    Div,
    Expr,
    Lit,
    Mod,
    Mul,
    Paren,
    PtrCast,
    Select,
    Signed,
    Spelled,
    StaticCast,
    Stride,
    Sub,
    Var,
    Xor,
)
from engine.lower.kquery import binary, is_atom, is_sum

_CACHE = "_c"  # the attribute a rendered node keeps its text in


def render(x: int | Expr) -> str:
    """The C text of `x` (a constant prints as Python prints it)."""
    if not isinstance(x, Expr):
        return str(x)
    text = x.__dict__.get(_CACHE)
    if text is None:
        fn = _RENDERERS.get(type(x))
        if fn is None:
            fn = next((_RENDERERS[k] for k in type(x).__mro__ if k in _RENDERERS), None)
            if fn is None:
                raise TypeError(f"no C spelling for kernel-IR expression {type(x).__name__}")
        text = fn(x)
        object.__setattr__(x, _CACHE, text)
    return text


def _p(x: int | Expr, need: bool) -> str:
    return f"({render(x)})" if need else render(x)


def _call(x: Call) -> str:
    targs = f"<{', '.join(x.targs)}>" if x.targs else ""
    return f"{x.fn}{targs}({', '.join(map(render, x.args))})"


# Scalar arithmetic (kexpr.Arith) by the op's name.
_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}


def spelled(node: Spelled, operands: tuple[str, ...]) -> str:
    """A typed op's C, with `operands` the C of its operands (kops' order), from ops_table."""
    m = operands
    if isinstance(node, kops.Literal):
        return ops_table.literal(node.value, node.dtype)
    if isinstance(node, kops.Cast):
        return ops_table.cast(m[0], node.src, node.dst, node.each)
    if isinstance(node, kops.Unary):
        return ops_table.unary(node.op, m[0], node.dtype)
    if isinstance(node, kops.Binary):
        return ops_table.binary(node.op, m[0], m[1], node.dtype, node.b_value)
    if isinstance(node, kops.Ternary):
        return ops_table.ternary(node.op, m[0], m[1], m[2], node.dtype)
    if isinstance(node, kops.Combine):
        return ops_table.reduction_combine(node.op, m[0], m[1], node.dtype)
    if isinstance(node, kops.Combiner):
        t = node.dtype.cuda_name
        return f"[]({t} a, {t} b) {{ return {ops_table.reduction_combine(node.op, 'a', 'b', node.dtype)}; }}"
    raise TypeError(f"no C spelling for {type(node).__name__}")


def _mul(x: Mul) -> str:
    neg = isinstance(x.a, int) and x.a < 0
    return f"{_p(x.a, is_sum(x.a) or neg)} * {_p(x.b, not is_atom(x.b))}"


def _signed(x: Signed) -> str:
    return f"((nvfuser_index_t)({render(x.x)}))" if binary(x.x) else f"((nvfuser_index_t){render(x.x)})"


_RENDERERS: dict[type, Callable] = {
    Var: lambda x: x.name,
    Lit: lambda x: x.text,
    Stride: lambda x: f"{x.tensor}.alloc_stride[{x.dim}]",
    Access: lambda x: f"{x.name}[{render(x.index)}]",
    AddrOf: lambda x: f"&{render(x.x)}",
    Deref: lambda x: f"*{render(x.x)}",
    Add: lambda x: f"{render(x.a)} + {_p(x.b, is_sum(x.b) and '-' in render(x.b))}",
    Sub: lambda x: f"{render(x.a)} - {_p(x.b, is_sum(x.b))}",
    Mul: _mul,
    Div: lambda x: f"{_p(x.a, is_sum(x.a))} / {render(x.b)}",
    Mod: lambda x: f"{_p(x.a, is_sum(x.a))} % {x.b}",
    # parenthesised whole: C's ^ binds looser than every arithmetic operator
    Xor: lambda x: f"({render(x.a)} ^ {render(x.b)})",
    Signed: _signed,
    Paren: lambda x: f"({render(x.x)})",
    Cmp: lambda x: f"{render(x.lhs)} {x.op} {render(x.rhs)}",
    And: lambda x: " && ".join(map(render, x.terms)),
    Select: lambda x: f"({render(x.cond)} ? {render(x.a)} : {render(x.b)})",
    Arith: lambda x: f"({render(x.a)} {_ARITH[x.op]} {render(x.b)})",
    CCast: lambda x: f"({x.ctype})({render(x.x)})",
    StaticCast: lambda x: f"static_cast<{x.ctype}>({render(x.x)})",
    PtrCast: lambda x: f"reinterpret_cast<{x.ctype}*>({render(x.x)})",
    Call: _call,
    Spelled: lambda x: spelled(x, tuple(map(render, x.operands()))),
}
