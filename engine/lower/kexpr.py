"""Typed kernel-IR expressions: index arithmetic, tensor accesses, predicates and ops.

Every node is data, a frozen dataclass: engine.codegen.expressions writes its C text
(parentheses where C needs them, from the classes of the operands, as engine.lower.kquery's
`is_sum` and `is_atom` say). Index arithmetic (Add, Sub, Mul, Div, Mod, Xor, Signed) is built
folded by engine.lower.cexpr; constants are Python ints. `Spelled` is a fusion op held typed
(engine.lower.kops: its name, dtypes and operand nodes), which codegen spells from its
ops table when it renders the node. Runtime calls are `Call`s (a function name and
template arguments, which are names and literals, around typed arguments); a `Lit` is a C
atom with no parts (a runtime scalar's name, `false`). A node has no `str`: passes compare
nodes (dataclass equality) and query them (engine.lower.kquery), never their text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING


def require_methods(cls: type, base: type, *names: str) -> None:
    """Raise TypeError unless every one of `names` is defined by `cls` or a class between it
    and `base`: the abstract methods of the kernel IR's node classes, checked when a class
    is made. (The bases are plain classes, not ABCs: an ABC's isinstance check goes through
    its metaclass, and the passes' tree walks make hundreds of thousands per compile.)"""
    for name in names:
        if not any(name in k.__dict__ for k in cls.__mro__[:cls.__mro__.index(base)]):
            raise TypeError(f"{cls.__name__} must define {name}() (abstract in {base.__name__})")


class Expr:
    """A typed C expression; subclasses are frozen dataclasses."""

    def __str__(self) -> str:
        # Its C is codegen's to write (engine.codegen.expressions.render); its repr is data.
        raise TypeError(f"a kernel-IR expression has no str (render it with engine.codegen.expressions): "
                        f"{self!r}")

    def children(self) -> tuple[int | Expr, ...]:
        return ()


@dataclass(frozen=True)
class Var(Expr):
    """A named index: a loop variable, `threadIdx.x`, a scope's index constant."""

    name: str


@dataclass(frozen=True)
class Lit(Expr):
    """A C atom the passes need not look into (a literal, a runtime scalar's name)."""

    text: str


@dataclass(frozen=True)
class Stride(Expr):
    """`T.alloc_stride[k]`: a global tensor's runtime allocation stride."""

    tensor: str
    dim: int


@dataclass(frozen=True)
class Access(Expr):
    """`name[index]`: an element of a tensor or array."""

    name: str
    index: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.index,)


@dataclass(frozen=True)
class Deref(Expr):
    """`*x`: the element a pointer points at."""

    x: Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class AddrOf(Expr):
    """`&x`."""

    x: Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Add(Expr):
    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Sub(Expr):
    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Mul(Expr):
    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Div(Expr):
    """`a / b`: b a constant in index arithmetic, a cast count in a Welford's mean."""

    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Mod(Expr):
    a: int | Expr
    b: int

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Xor(Expr):
    """a ^ b, parenthesised whole: C's ^ binds looser than every arithmetic operator."""

    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Signed(Expr):
    """`x` cast to the signed index type: CUDA's thread and block indices are unsigned, and
    so is arithmetic on them (see cexpr.sub)."""

    x: Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Paren(Expr):
    x: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Cmp(Expr):
    """`lhs op rhs`, a comparison (<, >=, ==, ...)."""

    lhs: int | Expr
    op: str
    rhs: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class And(Expr):
    """A conjunction `a && b && ...` (a guard's predicates)."""

    terms: tuple[Expr, ...]

    def children(self) -> tuple[int | Expr, ...]:
        return self.terms


@dataclass(frozen=True)
class Select(Expr):
    """`(cond ? a : b)`."""

    cond: Expr
    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.cond, self.a, self.b)


@dataclass(frozen=True)
class Arith(Expr):
    """`(a op b)`, parenthesised whole: arithmetic on the kernel's scalar arguments, `op` by
    name (add, sub, mul, div, mod)."""

    op: str
    a: int | Expr
    b: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class CCast(Expr):
    """`(ctype)(x)`: a scalar argument converted for a runtime call (a seed as uint64_t)."""

    ctype: str
    x: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class StaticCast(Expr):
    """`static_cast<ctype>(x)`."""

    ctype: str
    x: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class PtrCast(Expr):
    """`reinterpret_cast<ctype*>(x)`: a pointer (into the reduction's shared memory) as one to
    `ctype`."""

    ctype: str
    x: int | Expr

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


class Spelled(Expr):
    """A fusion op held typed, by name, dtypes and operand nodes (engine.lower.kops: a
    literal, a cast, a unary, binary or ternary op, a reduction's combine). Codegen spells it
    from its ops table when it renders it; an op or dtype the table cannot spell fails there,
    with a CompileError naming the op."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        require_methods(cls, Spelled, "operands")

    if TYPE_CHECKING:
        def operands(self) -> tuple[int | Expr, ...]:
            """The op's operand nodes, in its own order."""

    def children(self) -> tuple[int | Expr, ...]:
        return self.operands()


FALSE = Lit("false")  # a predicate that never holds
TRUE = Lit("true")


def lit(x: int | str | Expr) -> int | Expr:
    """`x` as a node: C text given as a string is a Lit."""
    return Lit(x) if isinstance(x, str) else x


@dataclass(frozen=True)
class Call(Expr):
    """`fn<targs>(args)`, or `fn(args)` without template arguments: a runtime function call
    (a vector copy, a cp.async, a reduction across the block or grid, a Welford update)."""

    fn: str
    targs: tuple[str, ...]
    args: tuple[int | Expr, ...]

    def children(self) -> tuple[int | Expr, ...]:
        return self.args
