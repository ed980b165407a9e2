"""Kernel IR: the loops, allocations, statements and synchronisation of one kernel.

Statements are data: they hold typed expressions (engine.lower.kexpr: indices, accesses,
predicates, ops); the structure (loops, predicates, allocations, reductions, barriers) stays
explicit so passes can rewrite it. engine.codegen.statements spells them as C, for the
kernel-IR listing and the CUDA source alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from engine.lower import kquery
from engine.lower.kexpr import FALSE, Add, And, Expr, Mul, Paren, Var
from engine.runtime.abi import ArgSpec, LaunchConfig


class Stmt:
    """A kernel-IR statement (engine.codegen.statements spells each kind)."""


# The block's linear thread index: the index a block-strided loop starts from.
TID = Paren(Add(Var("threadIdx.x"), Mul(Var("blockDim.x"), Add(Var("threadIdx.y"),
                                                              Mul(Var("blockDim.y"), Var("threadIdx.z"))))))


@dataclass
class Comment(Stmt):
    text: str


@dataclass
class Assign(Stmt):
    """`lhs = rhs;` — one element of an expression's output (C text given is a Lit)."""

    lhs: Expr
    rhs: Expr
    source: str = ""  # the fusion expression it comes from, e.g. "T3 = T1 + T2"
    copy_ctype: str | None = None  # a plain element copy of this type: may become a vector access



@dataclass
class AddTo(Stmt):
    """`lhs += rhs;`: a sum accumulated in place (a two-pass Welford's sums)."""

    lhs: Expr
    rhs: Expr


@dataclass
class Exec(Stmt):
    """`call;`: a runtime call made for its effect (a vector copy, a cp.async, a Welford
    update, a reduction across the block)."""

    call: Expr


@dataclass
class Local(Stmt):
    """`ctype name = init;`; without an init, `ctype name;` or, `zeroed`, `ctype name = {};`: a
    scalar variable (a grid reduction's last-block flag, the random-number cache, an offset
    or a scale a statement computes)."""

    ctype: str
    name: str
    init: Expr | None = None
    zeroed: bool = False


@dataclass
class Declare(Stmt):
    """`alignas(16) ctype name[size];`: a vector temporary of a pass, not a kernel buffer."""

    ctype: str
    name: str
    size: int


@dataclass
class IndexDef(Stmt):
    """`const nvfuser_index_t name = value;`: an index a scope defines for its statements."""

    name: str
    value: Expr


@dataclass
class ScalarDef(Stmt):
    """`const ctype name = value;`: a named constant (a scalar computed from the kernel's scalar
    arguments, once at the top of the kernel rather than in every element's expression; a
    deviation a two-pass Welford squares)."""

    ctype: str
    name: str
    value: Expr


def exprs(s: Stmt) -> list[Expr]:
    """The expressions `s` holds itself (not those of nested statements)."""
    if isinstance(s, Assign | AddTo):
        return [s.lhs, s.rhs]
    if isinstance(s, IfThenElse):
        return [s.cond]
    if isinstance(s, Exec):
        return [s.call]
    if isinstance(s, IndexDef | ScalarDef):
        return [s.value]
    if isinstance(s, Local) and s.init is not None:
        return [s.init]
    return []


def mentions(s: Stmt, name: str) -> bool:
    """Whether `s` itself (not a statement nested in it) names `name`: in its expressions, as
    the array or variable it declares, or in its text (a comment, a barrier's reason)."""
    if any(kquery.mentions(e, name) for e in exprs(s)):
        return True
    if name in own_words(s):
        return True
    return getattr(s, "name", None) == name or getattr(s, "var", None) == name


def own_words(s: Stmt) -> set[str]:
    """The words of the text `s` holds itself: a comment, a barrier's call and reason (none for
    other statements)."""
    if isinstance(s, Comment):
        return kquery.text_words(s.text)
    if isinstance(s, BlockSync):
        return {"__syncthreads"} | kquery.text_words(s.reason)
    return set()


@dataclass
class Allocate(Stmt):
    name: str
    ctype: str
    size: int
    memory: str  # "local" or "shared"
    offset: int = 0  # byte offset into dynamic shared memory
    init: Expr | None = None  # fill value, for reduction accumulators


@dataclass
class ForLoop(Stmt):
    var: str
    extent: int
    kind: str  # "serial", "unroll", "vectorize", "block_strided", "pipelined" (circular_buffer.py)
    domain: str  # the IterDomain it realises, for listings
    body: list[Stmt] = field(default_factory=list)
    threads: int = 1  # block_strided: the block's threads share the iterations
    step: int = 1  # serial and unroll: the variable's step (a block quantization's blocks)


# Runtime calls that wait for the whole block (engine/runtime/headers).
_BLOCK_WIDE = ("__syncthreads", "blockAllReduce", "blockReduce", "blockWelford", "blockBroadcast",
               "gridReduce", "grid_sync")


def children(s: Stmt) -> list[list[Stmt]]:
    """The statement lists nested in `s`: a loop's or a scope's body, a branch's two arms."""
    if isinstance(s, IfThenElse):
        return [s.then, s.orelse]
    body = getattr(s, "body", None)
    return [body] if isinstance(body, list) else []


def walk(stmts: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of `stmts` and of the lists nested in them, parents first."""
    for s in stmts:
        yield s
        for child in children(s):
            yield from walk(child)


def words(stmts: list[Stmt]) -> set[str]:
    """Every name the statements (and those nested in them) print: the words of their
    expressions (kquery.words), of their text (a comment, a barrier's reason), and
    the names and types they declare."""
    out: set[str] = set()
    for s in walk(stmts):
        for e in exprs(s):
            out |= kquery.words(e)
        out |= own_words(s)
        if isinstance(s, ForLoop):
            out.add(s.var)
        elif isinstance(s, IndexDef):
            out.add(s.name)
        elif isinstance(s, Local):
            out |= {s.name} | kquery.text_words(s.ctype)
        elif isinstance(s, Declare | Allocate):
            out |= {s.name} | kquery.text_words(s.ctype)
            if isinstance(s, Allocate) and s.init is not None:
                out |= kquery.words(s.init)
    return out


def signature(stmts: list[Stmt]) -> tuple[tuple[object, ...], ...]:
    """What the statements say, as data for the passes to compare (not C, which
    engine.codegen.statements writes): per statement, its kind, the names and sizes it
    declares, its expressions (nodes: compared as data), a comment's text and a barrier's
    reason, nested statements after their parent. Statements alike in
    all of that have equal signatures."""
    out: list[tuple[object, ...]] = []
    for s in walk(stmts):
        parts: list[object] = [type(s).__name__]
        if isinstance(s, ForLoop):
            parts += [s.var, s.extent, s.kind, s.threads, s.step]
        elif isinstance(s, Allocate):
            parts += [s.ctype, s.name, s.size, s.memory, s.offset, s.init]
        elif isinstance(s, Declare):
            parts += [s.ctype, s.name, s.size]
        elif isinstance(s, IndexDef | ScalarDef):
            parts += [s.name]
        elif isinstance(s, Local):
            parts += [s.ctype, s.name, s.zeroed]
        elif isinstance(s, Scope):
            parts += [s.inline]
        elif isinstance(s, Comment):
            parts += [s.text]
        elif isinstance(s, BlockSync):
            parts += [s.reason]
        parts += exprs(s)
        if isinstance(s, IfThenElse):
            parts += [len(s.then), len(s.orelse)]
        elif children(s):
            parts += [len(children(s)[0])]
        out.append(tuple(parts))
    return tuple(out)


def synchronizes(stmts: list[Stmt]) -> bool:
    """Whether the statements (or those nested in them) wait for the whole block: a barrier,
    or a block-wide runtime call."""
    for s in stmts:
        if isinstance(s, BlockSync):
            return True
        if isinstance(s, Exec | Assign):
            e = s.call if isinstance(s, Exec) else s.rhs
            if any(c in w for w in kquery.words(e) for c in _BLOCK_WIDE):
                return True
        if any(synchronizes(body) for body in children(s)):
            return True
    return False


@dataclass
class IfThenElse(Stmt):
    cond: Expr
    then: list[Stmt] = field(default_factory=list)
    orelse: list[Stmt] = field(default_factory=list)



def guard(preds: list[Expr], stmts: list[Stmt]) -> list[Stmt]:
    """`stmts` under the conjunction of `preds` (none: as they are; a false one or no
    statements: nothing)."""
    if not stmts or FALSE in preds:
        return []
    if not preds:
        return stmts
    return [IfThenElse(And(tuple(preds)), stmts)]


@dataclass
class Scope(Stmt):
    """A brace-delimited block: keeps a statement group's temporaries local; `inline`, written
    on one line (a two-pass Welford's squared deviation)."""

    body: list[Stmt] = field(default_factory=list)
    inline: bool = False


@dataclass
class BlockSync(Stmt):
    reason: str = ""
    # Shared buffers whose writes before it are read after it (RAW), and whose reads before
    # it precede writes after it (WAR): what engine.lower.barriers may move it for.
    raw: frozenset[str] = frozenset()
    war: frozenset[str] = frozenset()


@dataclass
class Kernel:
    name: str
    params: list[ArgSpec]
    body: list[Stmt]
    launch: LaunchConfig
    smem_bytes: int = 0
    # Extra global buffers the host allocates: name -> (ctype, elements, zero-filled)
    workspaces: dict[str, tuple[str, int, bool]] = field(default_factory=dict)
    # Blocks each SM must hold at once (a persistent grid of several blocks per SM):
    # __launch_bounds__'s second argument, which bounds the kernel's registers.
    min_blocks_per_sm: int = 1
