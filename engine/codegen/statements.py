"""Kernel-IR statements as CUDA C lines: the one place statements are spelled.

`stmt_lines(stmt, indent)` gives a statement (and those nested in it) as C text, indented
`indent` levels; `kernel_listing` the kernel IR as text (nvFuser's kernel_ir dump, in this
engine's terms), which the compile records as the `kernel_ir` stage. A statement type the
lowering adds needs its spelling registered here (`@_spells(Kind)`, looked up by the
statement's type, or a base class's); an unregistered one is an error naming its type.
Expressions inside statements are written by engine.codegen.expressions.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.codegen.expressions import render
from engine.lower import kir
from engine.lower.grid_epilogue import ShareCall, ShareLoop
from engine.lower.kexpr import Call

# The block's linear thread index, the index a block-strided loop starts from.
TID = render(kir.TID)

# The unroll pragma of a long serial loop whose body synchronizes the block.
SYNC_LOOP_UNROLL = 1


def _pad(indent: int) -> str:
    return "  " * indent


Speller = Callable[[kir.Stmt, int], list[str]]
_SPELLERS: dict[type, Speller] = {}


def _spells(kind: type) -> Callable[[Speller], Speller]:
    def register(fn: Speller) -> Speller:
        _SPELLERS[kind] = fn
        return fn
    return register


def stmt_lines(s: kir.Stmt, indent: int) -> list[str]:
    """`s` as C lines, indented `indent` levels."""
    fn = _SPELLERS.get(type(s))
    if fn is None:
        fn = next((_SPELLERS[k] for k in type(s).__mro__ if k in _SPELLERS), None)
        if fn is None:
            raise TypeError(f"no CUDA spelling for kernel-IR statement {type(s).__name__}")
    return fn(s, indent)


def body_lines(stmts: list[kir.Stmt], indent: int) -> list[str]:
    return [line for s in stmts for line in stmt_lines(s, indent)]


@_spells(kir.Comment)
def _(s: kir.Comment, indent: int) -> list[str]:
    return [f"{_pad(indent)}// {s.text}"]


@_spells(kir.Assign)
def _(s: kir.Assign, indent: int) -> list[str]:
    return [f"{_pad(indent)}{render(s.lhs)} = {render(s.rhs)};"]


@_spells(kir.AddTo)
def _(s: kir.AddTo, indent: int) -> list[str]:
    return [f"{_pad(indent)}{render(s.lhs)} += {render(s.rhs)};"]


@_spells(kir.Exec)
def _(s: kir.Exec, indent: int) -> list[str]:
    return [f"{_pad(indent)}{render(s.call)};"]


@_spells(kir.Declare)
def _(s: kir.Declare, indent: int) -> list[str]:
    return [f"{_pad(indent)}alignas(16) {s.ctype} {s.name}[{s.size}];"]


@_spells(kir.IndexDef)
def _(s: kir.IndexDef, indent: int) -> list[str]:
    return [f"{_pad(indent)}const nvfuser_index_t {s.name} = {render(s.value)};"]


@_spells(kir.ScalarDef)
def _(s: kir.ScalarDef, indent: int) -> list[str]:
    return [f"{_pad(indent)}const {s.ctype} {s.name} = {render(s.value)};"]


@_spells(kir.Local)
def _(s: kir.Local, indent: int) -> list[str]:
    init = f" = {render(s.init)}" if s.init is not None else " = {}" if s.zeroed else ""
    return [f"{_pad(indent)}{s.ctype} {s.name}{init};"]


@_spells(kir.Allocate)
def _(s: kir.Allocate, indent: int) -> list[str]:
    p = _pad(indent)
    if s.memory == "shared":
        return [f"{p}{s.ctype}* {s.name} = reinterpret_cast<{s.ctype}*>(smem + {s.offset});"]
    # 16-byte alignment lets vectorized copies read and write whole local arrays.
    out = [f"{p}alignas(16) {s.ctype} {s.name}[{s.size}];"]
    if s.init is not None:
        out.append(f"{p}#pragma unroll")
        out.append(f"{p}for (int k = 0; k < {s.size}; ++k) {s.name}[k] = {render(s.init)};")
    return out


@_spells(kir.ForLoop)
def _(s: kir.ForLoop, indent: int) -> list[str]:
    p = _pad(indent)
    out = []
    if s.kind in ("unroll", "vectorize"):
        out.append(f"{p}#pragma unroll")
    elif s.kind == "serial" and s.extent > 8:
        # Long serial loops (a thread's share of a reduction) keep several iterations' loads
        # in flight; short ones nvcc unrolls by itself. A loop whose body waits for the
        # block (a persistent kernel's loop over its rows) is not unrolled, as nvFuser's:
        # the barriers keep the iterations apart, and an unrolled body only holds more
        # registers.
        out.append(f"{p}#pragma unroll {SYNC_LOOP_UNROLL if kir.synchronizes(s.body) else 4}")
    if s.kind == "block_strided":
        if s.extent % s.threads == 0:
            # A known trip count: unrolled, each thread's loads are all in flight at once.
            trips = s.extent // s.threads
            out.append(f"{p}#pragma unroll")
            out.append(f"{p}for (nvfuser_index_t {s.var}_k = 0; {s.var}_k < {trips}; ++{s.var}_k) {{")
            out.append(f"{p}  const nvfuser_index_t {s.var} = {TID} + {s.var}_k * {s.threads};")
        else:
            out.append(f"{p}for (nvfuser_index_t {s.var} = {TID}; {s.var} < {s.extent}; "
                       f"{s.var} += {s.threads}) {{")
    else:
        step = f"++{s.var}" if s.step == 1 else f"{s.var} += {s.step}"
        out.append(f"{p}for (nvfuser_index_t {s.var} = 0; {s.var} < {s.extent}; {step}) {{")
    out += body_lines(s.body, indent + 1)
    out.append(p + "}")
    return out


@_spells(kir.IfThenElse)
def _(s: kir.IfThenElse, indent: int) -> list[str]:
    p = _pad(indent)
    out = [f"{p}if ({render(s.cond)}) {{", *body_lines(s.then, indent + 1)]
    if s.orelse:
        out += [p + "} else {", *body_lines(s.orelse, indent + 1)]
    out.append(p + "}")
    return out


@_spells(kir.Scope)
def _(s: kir.Scope, indent: int) -> list[str]:
    p = _pad(indent)
    if s.inline:
        return [" ".join([p + "{", *(line.strip() for line in body_lines(s.body, 0)), "}"])]
    return [p + "{", *body_lines(s.body, indent + 1), p + "}"]


@_spells(kir.BlockSync)
def _(s: kir.BlockSync, indent: int) -> list[str]:
    tail = f"  // {s.reason}" if s.reason else ""
    return [f"{_pad(indent)}__syncthreads();{tail}"]


@_spells(ShareCall)
def _(s: ShareCall, indent: int) -> list[str]:
    call = Call("gridReduceGroupShares", s.sync.targs, s.sync.args)
    return [f"{_pad(indent)}const FsShare {s.share} = {render(call)};"]


@_spells(ShareLoop)
def _(s: ShareLoop, indent: int) -> list[str]:
    p = _pad(indent)
    first = s.calls[0]
    tflags = ", ".join("true" if b else "false" for b in first.sync.threads)
    out = [f"{p}for (unsigned fs_v = {first.share}.v0 + {TID}; fs_v < {first.share}.v1; "
           f"fs_v += blockDim.x * blockDim.y * blockDim.z) {{",
           f"{p}  const uint3 fs_vt = fsVirtualThread<{tflags}>(fs_v);"]
    for c in s.calls:
        out += [f"{p}  fsShareLoad({c.sync.acc}, {render(c.sync.work)}, {c.share}, fs_v);", f"{p}  {c.sync.flag} = true;"]
    out += body_lines(s.body, indent + 1)
    out.append(f"{p}}}")
    return out


def kernel_listing(kernel: kir.Kernel) -> str:
    """The kernel IR as text (nvFuser's kernel_ir dump, in this engine's terms)."""
    head = ", ".join(f"{p.decl} {p.name}" for p in kernel.params)
    return "\n".join([f"%kernel {kernel.name}({head}) {{", *body_lines(kernel.body, 1),
                      f"}} // %kernel {kernel.name}"]) + "\n"
