"""Typed kernel-IR expressions: index arithmetic, tensor accesses, predicates and ops.

Every node renders itself as the C text the kernel holds (`str(node)`). Index arithmetic
(Add, Sub, Mul, Div, Mod, Xor, Signed) is built folded by engine.lower.cexpr; a node's
parentheses follow from the classes of its operands (a sum as an operand of a product is
parenthesised, ...), so rendering needs no look at text. Constants are Python ints.
`Spelled` is a fusion op held typed (engine.lower.kops: its name, dtypes and operand nodes),
which engine.codegen spells; `Op` is a runtime call or statement spelled by lowering around
typed operands; `Lit` is a C atom with no parts (a runtime scalar's name, a loop bound).
Passes query the tree (engine.lower.kquery) instead of parsing the text.
"""

from __future__ import annotations

from collections.abc import Callable
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
    """A typed C expression; subclasses are frozen dataclasses. Every subclass defines
    `render`, the C text of the node (checked when the class is made)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        require_methods(cls, Expr, "render")

    if TYPE_CHECKING:
        def render(self) -> str: ...

    def __str__(self) -> str:
        # A node never changes (frozen): its text is rendered once.
        text = self.__dict__.get("_text")
        if text is None:
            text = self.render()
            object.__setattr__(self, "_text", text)
        return text

    def children(self) -> tuple[int | Expr, ...]:
        return ()


def text(x: int | Expr) -> str:
    return str(x)


@dataclass(frozen=True)
class Var(Expr):
    """A named index: a loop variable, `threadIdx.x`, a scope's index constant."""

    name: str

    def render(self) -> str:
        return self.name


@dataclass(frozen=True)
class Lit(Expr):
    """A C atom the passes need not look into (a literal, a runtime scalar's name)."""

    text: str

    def render(self) -> str:
        return self.text


@dataclass(frozen=True)
class Stride(Expr):
    """`T.alloc_stride[k]`: a global tensor's runtime allocation stride."""

    tensor: str
    dim: int

    def render(self) -> str:
        return f"{self.tensor}.alloc_stride[{self.dim}]"


@dataclass(frozen=True)
class Access(Expr):
    """`name[index]`: an element of a tensor or array."""

    name: str
    index: int | Expr

    def render(self) -> str:
        return f"{self.name}[{self.index}]"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.index,)


@dataclass(frozen=True)
class AddrOf(Expr):
    """`&x`."""

    x: Expr

    def render(self) -> str:
        return f"&{self.x}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Add(Expr):
    a: int | Expr
    b: int | Expr

    def render(self) -> str:
        return f"{self.a} + {_p(self.b, is_sum(self.b) and has_minus(self.b))}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Sub(Expr):
    a: int | Expr
    b: int | Expr

    def render(self) -> str:
        return f"{self.a} - {_p(self.b, is_sum(self.b))}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Mul(Expr):
    a: int | Expr
    b: int | Expr

    def render(self) -> str:
        neg = isinstance(self.a, int) and self.a < 0
        return f"{_p(self.a, is_sum(self.a) or neg)} * {_p(self.b, not is_atom(self.b))}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Div(Expr):
    a: int | Expr
    b: int

    def render(self) -> str:
        return f"{_p(self.a, is_sum(self.a))} / {self.b}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Mod(Expr):
    a: int | Expr
    b: int

    def render(self) -> str:
        return f"{_p(self.a, is_sum(self.a))} % {self.b}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Xor(Expr):
    """a ^ b, parenthesised whole: C's ^ binds looser than every arithmetic operator."""

    a: int | Expr
    b: int | Expr

    def render(self) -> str:
        return f"({self.a} ^ {self.b})"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Signed(Expr):
    """`x` cast to the signed index type: CUDA's thread and block indices are unsigned, and
    so is arithmetic on them (see cexpr.sub)."""

    x: Expr

    def render(self) -> str:
        return f"((nvfuser_index_t)({self.x}))" if _binary(self.x) else f"((nvfuser_index_t){self.x})"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Paren(Expr):
    x: int | Expr

    def render(self) -> str:
        return f"({self.x})"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.x,)


@dataclass(frozen=True)
class Cmp(Expr):
    """`lhs op rhs`, a comparison (<, >=, ==, ...)."""

    lhs: int | Expr
    op: str
    rhs: int | Expr

    def render(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class And(Expr):
    """A conjunction `a && b && ...` (a guard's predicates)."""

    terms: tuple[Expr, ...]

    def render(self) -> str:
        return " && ".join(map(str, self.terms))

    def children(self) -> tuple[int | Expr, ...]:
        return self.terms


@dataclass(frozen=True)
class Select(Expr):
    """`(cond ? a : b)`."""

    cond: Expr
    a: int | Expr
    b: int | Expr

    def render(self) -> str:
        return f"({self.cond} ? {self.a} : {self.b})"

    def children(self) -> tuple[int | Expr, ...]:
        return (self.cond, self.a, self.b)


@dataclass(frozen=True)
class Op(Expr):
    """An operator or call spelled by `parts` around typed `args`:
    parts[0] args[0] parts[1] ... args[-1] parts[-1] (one more part than args)."""

    parts: tuple[str, ...]
    args: tuple[int | Expr, ...]

    def render(self) -> str:
        out = [self.parts[0]]
        for a, p in zip(self.args, self.parts[1:]):
            out += [str(a), p]
        return "".join(out)

    def children(self) -> tuple[int | Expr, ...]:
        return self.args


# The C spelling of a typed op (a Spelled node): the text around its operands and the
# operands in the order it names them. engine.codegen.spelling installs it when imported (as
# `import engine` does): ops are spelled by codegen, which lowering does not import.
SPELLING: Callable[[Spelled], tuple[tuple[str, ...], tuple[int, ...]]] | None = None


class Spelled(Expr):
    """A fusion op held typed, by name, dtypes and operand nodes (engine.lower.kops: a
    literal, a cast, a unary, binary or ternary op, a reduction's combine); codegen spells it
    (SPELLING) as C text `parts` around `refs`, its operands in the order and number the
    spelling names them: parts[0] refs[0] parts[1] ... refs[-1] parts[-1]. It is spelled
    when built, so an op codegen cannot spell fails where it is lowered."""

    parts: tuple[str, ...]
    refs: tuple[int | Expr, ...]

    def __post_init__(self) -> None:
        if SPELLING is None:
            raise RuntimeError("engine.codegen is not imported: typed ops have no spelling")
        parts, order = SPELLING(self)
        operands = self.operands()
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "refs", tuple(operands[k] for k in order))

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        require_methods(cls, Spelled, "operands")

    if TYPE_CHECKING:
        def operands(self) -> tuple[int | Expr, ...]:
            """The op's operand nodes, in its own order."""

    def render(self) -> str:
        out = [self.parts[0]]
        for a, p in zip(self.refs, self.parts[1:]):
            out += [str(a), p]
        return "".join(out)

    def children(self) -> tuple[int | Expr, ...]:
        return self.refs


def _binary(x: int | Expr) -> bool:
    """Whether `x` renders with a binary operator outside parentheses."""
    return isinstance(x, Add | Sub | Mul | Div | Mod | Cmp | And)


def is_sum(x: int | Expr) -> bool:
    """`x` renders as a sum or difference at its top level."""
    return isinstance(x, Add | Sub | Cmp | And)


def is_atom(x: int | Expr) -> bool:
    """`x` renders with no operator outside parentheses (a negative constant has its sign)."""
    return x >= 0 if isinstance(x, int) else not _binary(x)


def has_minus(x: int | Expr) -> bool:
    """Whether `x`'s rendering holds a minus sign anywhere."""
    if isinstance(x, int):
        return x < 0
    if isinstance(x, Sub):
        return True
    if isinstance(x, Lit):
        return "-" in x.text
    if isinstance(x, Op | Spelled) and any("-" in p for p in x.parts):
        return True
    return any(has_minus(c) for c in x.children())


def _p(x: int | Expr, need: bool) -> str:
    return f"({x})" if need else str(x)


FALSE = Lit("false")  # a predicate that never holds
_MARK = "\x00"


def marked(fn: Callable[..., str], n: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """`fn` (a function that spells C around its `n` operands) as the text around them and
    the operands in the order it names them (an operand may be named twice, or not at all):
    `fn` sees a marker for each operand."""
    pieces = fn(*(f"{_MARK}{k}{_MARK}" for k in range(n))).split(_MARK)
    return tuple(pieces[0::2]), tuple(int(k) for k in pieces[1::2])


def spell(fn: Callable[..., str], *args: int | str | Expr) -> int | Expr:
    """`fn` (a function that spells C around its operands, such as a runtime call) applied to
    `args`, as an Op that keeps them typed: the text around the operands becomes the Op's
    parts. A string operand is a Lit."""
    parts, order = marked(fn, len(args))
    typed = [lit(a) for a in args]
    refs = [typed[k] for k in order]
    if parts == ("", ""):
        return refs[0]
    return Op(parts, tuple(refs))


def lit(x: int | str | Expr) -> int | Expr:
    """`x` as a node: C text given as a string is a Lit."""
    return Lit(x) if isinstance(x, str) else x


@dataclass(frozen=True)
class Call(Expr):
    """`fn<targs>(args)`: a runtime function call (a vector copy, a cp.async)."""

    fn: str
    targs: tuple[str, ...]
    args: tuple[int | Expr, ...]

    def render(self) -> str:
        return f"{self.fn}<{', '.join(self.targs)}>({', '.join(map(str, self.args))})"

    def children(self) -> tuple[int | Expr, ...]:
        return self.args
