"""Kernel IR: the loops, allocations, statements and synchronisation of one kernel.

Statements hold typed expressions (engine.lower.kexpr: indices, accesses, predicates,
ops) that render as C; the structure (loops, predicates, allocations, reductions,
barriers) stays explicit so passes can rewrite it and both the kernel-IR listing and the
CUDA renderer read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.lower import kquery
from engine.lower.kexpr import FALSE, And, Expr, Lit, require_methods
from engine.runtime.abi import ArgSpec, LaunchConfig


class Stmt:
    """A kernel-IR statement. Every subclass defines `lines(indent)`: the statement as text,
    indented `indent` levels (checked when the class is made, as kexpr.Expr's render)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        require_methods(cls, Stmt, "lines")

    if TYPE_CHECKING:
        def lines(self, indent: int) -> list[str]: ...


def _pad(indent: int) -> str:
    return "  " * indent


@dataclass
class Comment(Stmt):
    text: str

    def lines(self, indent: int) -> list[str]:
        return [f"{_pad(indent)}// {self.text}"]


@dataclass
class Assign(Stmt):
    """`lhs = rhs;` — one element of an expression's output (C text given is a Lit)."""

    lhs: Expr
    rhs: Expr
    source: str = ""  # the fusion expression it comes from, e.g. "T3 = T1 + T2"
    copy_ctype: str | None = None  # a plain element copy of this type: may become a vector access

    def __post_init__(self) -> None:
        self.lhs, self.rhs = _typed(self.lhs), _typed(self.rhs)

    def lines(self, indent: int) -> list[str]:
        return [f"{_pad(indent)}{self.lhs} = {self.rhs};"]


def _typed(x: str | Expr) -> Expr:
    return Lit(x) if isinstance(x, str) else x


@dataclass
class Raw(Stmt):
    """A statement whose form passes need not see (a runtime-function call): its text, or a
    typed expression that renders as it (an Op whose parts hold the `;`), whose accesses
    passes can then find."""

    text: str | Expr

    def lines(self, indent: int) -> list[str]:
        return [_pad(indent) + ln for ln in str(self.text).splitlines()]


@dataclass
class Exec(Stmt):
    """`call;`: a runtime call made for its effect (a vector copy, a cp.async)."""

    call: Expr

    def lines(self, indent: int) -> list[str]:
        return [f"{_pad(indent)}{self.call};"]


@dataclass
class Declare(Stmt):
    """`alignas(16) ctype name[size];`: a vector temporary of a pass, not a kernel buffer."""

    ctype: str
    name: str
    size: int

    def lines(self, indent: int) -> list[str]:
        return [f"{_pad(indent)}alignas(16) {self.ctype} {self.name}[{self.size}];"]


@dataclass
class IndexDef(Stmt):
    """`const nvfuser_index_t name = value;`: an index a scope defines for its statements."""

    name: str
    value: Expr

    def lines(self, indent: int) -> list[str]:
        return [f"{_pad(indent)}const nvfuser_index_t {self.name} = {self.value};"]


@dataclass
class ScalarDef(Stmt):
    """`const ctype name = value;`: a scalar computed from the kernel's scalar arguments, once
    at the top of the kernel rather than in every element's expression."""

    ctype: str
    name: str
    value: Expr

    def lines(self, indent: int) -> list[str]:
        return [f"{_pad(indent)}const {self.ctype} {self.name} = {self.value};"]


def exprs(s: Stmt) -> list[Expr]:
    """The expressions `s` holds itself (not those of nested statements)."""
    if isinstance(s, Assign):
        return [s.lhs, s.rhs]
    if isinstance(s, IfThenElse):
        return [s.cond]
    if isinstance(s, Exec):
        return [s.call]
    if isinstance(s, IndexDef | ScalarDef):
        return [s.value]
    if isinstance(s, Raw) and isinstance(s.text, Expr):
        return [s.text]
    return []


def mentions(s: Stmt, name: str) -> bool:
    """Whether `s` itself (not a statement nested in it) names `name`: in its expressions, as
    the array or variable it declares, or in its text (a Raw's, a comment, a barrier's reason)."""
    if any(kquery.mentions(e, name) for e in exprs(s)):
        return True
    if name in own_words(s):
        return True
    return getattr(s, "name", None) == name or getattr(s, "var", None) == name


def own_words(s: Stmt) -> set[str]:
    """The words of the text `s` holds itself: a Raw's text, a comment, a barrier's call and
    reason (none for other statements)."""
    if isinstance(s, Raw) and isinstance(s.text, str) or isinstance(s, Comment):
        return kquery.text_words(s.text)  # type: ignore[arg-type]
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

    def lines(self, indent: int) -> list[str]:
        p = _pad(indent)
        if self.memory == "shared":
            return [f"{p}{self.ctype}* {self.name} = reinterpret_cast<{self.ctype}*>(smem + {self.offset});"]
        # 16-byte alignment lets vectorized copies read and write whole local arrays.
        out = [f"{p}alignas(16) {self.ctype} {self.name}[{self.size}];"]
        if self.init is not None:
            out.append(f"{p}#pragma unroll")
            out.append(f"{p}for (int k = 0; k < {self.size}; ++k) {self.name}[k] = {self.init};")
        return out


@dataclass
class ForLoop(Stmt):
    var: str
    extent: int
    kind: str  # "serial", "unroll", "vectorize", "block_strided", "pipelined" (circular_buffer.py)
    domain: str  # the IterDomain it realises, for listings
    body: list[Stmt] = field(default_factory=list)
    threads: int = 1  # block_strided: the block's threads share the iterations

    def lines(self, indent: int) -> list[str]:
        p = _pad(indent)
        out = []
        if self.kind in ("unroll", "vectorize"):
            out.append(f"{p}#pragma unroll")
        elif self.kind == "serial" and self.extent > 8:
            # Long serial loops (a thread's share of a reduction) keep several iterations' loads
            # in flight; short ones nvcc unrolls by itself. A loop whose body waits for the
            # block (a persistent kernel's loop over its rows) is not unrolled, as nvFuser's:
            # the barriers keep the iterations apart, and an unrolled body only holds more
            # registers.
            out.append(f"{p}#pragma unroll {SYNC_LOOP_UNROLL if _synchronizes(self.body) else 4}")
        if self.kind == "block_strided":
            tid = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
            if self.extent % self.threads == 0:
                # A known trip count: unrolled, each thread's loads are all in flight at once.
                trips = self.extent // self.threads
                out.append(f"{p}#pragma unroll")
                out.append(f"{p}for (nvfuser_index_t {self.var}_k = 0; {self.var}_k < {trips}; ++{self.var}_k) {{")
                out.append(f"{p}  const nvfuser_index_t {self.var} = {tid} + {self.var}_k * {self.threads};")
            else:
                out.append(f"{p}for (nvfuser_index_t {self.var} = {tid}; {self.var} < {self.extent}; "
                           f"{self.var} += {self.threads}) {{")
        else:
            out.append(f"{p}for (nvfuser_index_t {self.var} = 0; {self.var} < {self.extent}; ++{self.var}) {{")
        for s in self.body:
            out.extend(s.lines(indent + 1))
        out.append(p + "}")
        return out


# The unroll pragma of a long serial loop whose body synchronizes the block.
SYNC_LOOP_UNROLL = 1
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
    expressions (kquery.words), of their text (a Raw's, a comment, a barrier's reason), and
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
        elif isinstance(s, Declare | Allocate):
            out |= {s.name} | kquery.text_words(s.ctype)
            if isinstance(s, Allocate) and s.init is not None:
                out |= kquery.words(s.init)
    return out


def _synchronizes(stmts: list[Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, BlockSync):
            return True
        if isinstance(s, Raw | Exec) and any(c in str(s.text if isinstance(s, Raw) else s.call) for c in _BLOCK_WIDE):
            return True
        if isinstance(s, Assign) and any(c in str(s.rhs) for c in _BLOCK_WIDE):
            return True
        if any(_synchronizes(body) for body in children(s)):
            return True
    return False


@dataclass
class IfThenElse(Stmt):
    cond: Expr
    then: list[Stmt] = field(default_factory=list)
    orelse: list[Stmt] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cond = _typed(self.cond)

    def lines(self, indent: int) -> list[str]:
        p = _pad(indent)
        out = [f"{p}if ({self.cond}) {{"]
        for s in self.then:
            out.extend(s.lines(indent + 1))
        if self.orelse:
            out.append(p + "} else {")
            for s in self.orelse:
                out.extend(s.lines(indent + 1))
        out.append(p + "}")
        return out


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
    """A brace-delimited block: keeps a statement group's temporaries local."""

    body: list[Stmt] = field(default_factory=list)

    def lines(self, indent: int) -> list[str]:
        p = _pad(indent)
        out = [p + "{"]
        for s in self.body:
            out.extend(s.lines(indent + 1))
        out.append(p + "}")
        return out


@dataclass
class BlockSync(Stmt):
    reason: str = ""
    # Shared buffers whose writes before it are read after it (RAW), and whose reads before
    # it precede writes after it (WAR): what engine.lower.barriers may move it for.
    raw: frozenset[str] = frozenset()
    war: frozenset[str] = frozenset()

    def lines(self, indent: int) -> list[str]:
        tail = f"  // {self.reason}" if self.reason else ""
        return [f"{_pad(indent)}__syncthreads();{tail}"]


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

    def listing(self) -> str:
        """The kernel IR as text (nvFuser's kernel_ir dump, in this engine's terms)."""
        head = ", ".join(f"{p.decl} {p.name}" for p in self.params)
        out = [f"%kernel {self.name}({head}) {{"]
        for s in self.body:
            out.extend(s.lines(1))
        out.append(f"}} // %kernel {self.name}")
        return "\n".join(out) + "\n"
