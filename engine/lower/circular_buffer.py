"""Circular buffering: a shared-memory cache loaded with cp.async, a stage ahead of its use.

TensorView.circular_buffer(D) marks a shared-memory copy of a global tensor whose first axis
right of its compute-at position is a stage axis of extent D, kept in its allocation: the
cache holds D stages. Without this pass the loop at the compute-at position loads all D
stages, waits at a barrier, then computes them one after another. With it, the loads run
D - 1 stages ahead of the computation, across iterations of that loop:

    load stages 0 .. D-2                          (prologue, one cp.async group each)
    for n:                                        (the loop at the compute-at position)
      for s < D:                                  (the consumers' stage loop)
        wait until stage n*D + s has landed; __syncthreads
        load stage n*D + s + D-1 (into the slot of the stage before), if there is one; commit
        compute stage s

The statements of the load nest are reused as they are: a load ahead re-declares the loop
indices it depends on in an inner scope, and its copies (loadGeneric vectors, or elements of
4 or 8 bytes) become fsCpAsync.

circular_buffers_of checks on the IR that the consumers' loop right of the cache's
compute-at position is the cache's stage axis; this pass then needs the kernel-IR shape that
pipeline._assemble makes for such a loop: the cache's allocation, the WAR barrier, the stage
loop of the load nest, the RAW barrier, then the consumers' stage loop. A loop of another
shape keeps its plain loads, and Lowered.stages["circular_buffer"] says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from engine.dtypes import ctype_bytes
from engine.ir import exprs as ex
from engine.ir.loop_map import loop_map
from engine.ir.tensorview import MemoryType, TensorView
from engine.lower import kir
from engine.lower.kexpr import Access, Add, AddrOf, Call, Cmp, Div, Mod, Mul, Paren, Var
from engine.lower.loops import out_tv

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.lower.buffers import Buffer
    from engine.lower.index import Extents


@dataclass(frozen=True)
class CircularBuffer:
    name: str  # the cache's kernel name, e.g. "T7"
    depth: int  # stages: the extent of its stage axis


def circular_buffers_of(buffers: Iterable[Buffer], ext: Extents, fusion: Fusion
                        ) -> tuple[dict[str, CircularBuffer], list[str]]:
    """The shared caches marked for circular buffering whose stage axis the IR allows to
    pipeline, and a note for each one refused."""
    out, notes = {}, []
    for b in buffers:
        depth = getattr(b.tv, "circular_buffer_depth", 0)
        if b.memory != "shared" or depth < 2:
            continue
        why = _stage_axis_refusal(b.tv, depth, ext, fusion)
        if why is None:
            out[b.name] = CircularBuffer(b.name, depth)
        else:
            notes.append(f"{b.name}: not circular-buffered: {why}")
    return out, notes


def _stage_axis_refusal(tv: TensorView, depth: int, ext: Extents, fusion: Fusion) -> str | None:
    """Why `tv`'s axis right of its compute-at position is not a stage axis that every consumer
    iterates as its next loop (the stage its loads run ahead of), if it is not."""
    p = tv.compute_at_pos
    src = tv.definition.inputs[0] if isinstance(tv.definition, ex.LoadStoreOp) else None
    if not (isinstance(src, TensorView) and src.memory_type == MemoryType.Global):
        return "it is not a copy of a global tensor"
    if p >= tv.nloop or ext.of(tv.axis(p)) != depth:
        return f"its axis right of the compute-at position is not {depth} long"
    for e in fusion.uses_of(tv):
        c = out_tv(e)
        if c.nloop <= p or loop_map(tv, c).get(tv.axis(p)) is not c.axis(p):
            return f"{c.short_name} does not iterate its stage axis {tv.axis(p)} right after the shared loops"
    return None


def circular_buffer(body: list[kir.Stmt], bufs: dict[str, CircularBuffer], notes: list[str],
                    pipelined: set[str] | None = None) -> list[kir.Stmt]:
    """The kernel `body` with every buffer of `bufs` pipelined where its loops allow; `notes`
    gets one line per buffer: how it was pipelined, or why not; `pipelined` gets the names of
    the buffers now loaded by cp.async."""
    done_names = pipelined if pipelined is not None else set()
    body = _walk(body, bufs, notes, done_names)
    cbs = _buffers_of(body, bufs)
    if not cbs:  # a cache allocated in the kernel's top block: its loop runs once
        return body
    done = _pipeline(body, cbs, None, notes)
    if done is None:
        return body
    done_names.update(cb.name for cb in cbs)
    return done


def _walk(body: list[kir.Stmt], bufs: dict[str, CircularBuffer], notes: list[str],
          pipelined: set[str]) -> list[kir.Stmt]:
    out: list[kir.Stmt] = []
    for st in body:
        for child in kir.children(st):
            child[:] = _walk(child, bufs, notes, pipelined)
        cbs = _buffers_of(st.body, bufs) if isinstance(st, kir.ForLoop) else []
        done = _pipeline(st.body, cbs, st, notes) if cbs else None
        if done is not None:
            pipelined.update(cb.name for cb in cbs)
        out.extend(done if done is not None else [st])
    return out


def _buffers_of(body: list[kir.Stmt], bufs: dict[str, CircularBuffer]) -> list[CircularBuffer]:
    return [bufs[st.name] for st in body
            if isinstance(st, kir.Allocate) and st.memory == "shared" and st.name in bufs]


def _pipeline(body: list[kir.Stmt], cbs: list[CircularBuffer], outer: kir.ForLoop | None,
              notes: list[str]) -> list[kir.Stmt] | None:
    """`body` (of the loop `outer` at the caches' compute-at position, or of the kernel when
    that loop runs once) with the stages of every cache of `cbs` loaded ahead, all of a
    stage in one cp.async group; None if its shape is another."""
    names = ", ".join(cb.name for cb in cbs)
    parts = _parts(body, cbs, outer)
    where = f"loop {outer.var}" if outer is not None else "the kernel"
    if isinstance(parts, str):
        notes.extend(f"{cb.name}: not circular-buffered: {parts}" for cb in cbs)
        return None
    head, loads, compute, tail = parts
    d, s = cbs[0].depth, compute.var
    steps = d * (outer.extent if outer is not None else 1)

    def load_step(step: int | Var) -> list[kir.Stmt]:
        # Each load nest's stage body with the indices of `step` in scope.
        out: list[kir.Stmt] = []
        for load in loads:
            defs: list[kir.Stmt] = [kir.IndexDef(load.var, Mod(Paren(step), d))]
            if outer is not None:
                defs.insert(0, kir.IndexDef(outer.var, Div(Paren(step), d)))
            out.append(kir.Scope([*defs, *[_async(st) for st in load.body]]))
        return out

    ahead = f"fs_{cbs[0].name}_ahead"
    current = Add(Mul(Var(outer.var), d), Var(s)) if outer is not None else Var(s)
    # One barrier per stage: after it, this stage has landed for every thread, and every
    # thread is done with the previous stage, whose slot the load ahead then refills.
    stage_body = [
        kir.Exec(Call("fsCpAsyncWait", (str(d - 2),), ())),
        kir.BlockSync(f"RAW: stage {s} of {names} has landed; WAR: the previous stage is read"),
        kir.Scope([kir.IndexDef(ahead, Add(current, d - 1)),
                   kir.IfThenElse(Cmp(Var(ahead), "<", steps), load_step(Var(ahead)))]),
        kir.Exec(Call("fsCpAsyncCommit", (), ())), *compute.body,
    ]
    stage = kir.ForLoop(s, d, "pipelined", compute.domain, stage_body, compute.threads)
    notes.extend(f"{cb.name}: circular buffer of {d} stages over {where} and loop {s} ({steps} steps), "
                 f"loaded {d - 1} stage(s) ahead by cp.async" for cb in cbs)
    # Before a loop the caches' names are not declared yet: the prologue declares them too.
    mine = {cb.name for cb in cbs}
    alloc = [st for st in head if isinstance(st, kir.Allocate) and st.name in mine] if outer else []
    prologue: list[kir.Stmt] = []
    for k in range(min(d - 1, steps)):
        prologue += [kir.Scope([*alloc, *load_step(k)]), kir.Exec(Call("fsCpAsyncCommit", (), ()))]
    if outer is None:
        return [*head, *prologue, stage, *tail]
    return [*prologue, kir.ForLoop(outer.var, outer.extent, "pipelined", outer.domain, [*head, stage, *tail],
                                   outer.threads)]


def _parts(body: list[kir.Stmt], cbs: list[CircularBuffer], outer: kir.ForLoop | None
           ) -> tuple[list[kir.Stmt], list[kir.ForLoop], kir.ForLoop, list[kir.Stmt]] | str:
    """(what comes before the load nests, the load nests' stage loops, the consumers' stage
    loop, what follows it), or why the block has another shape. In a loop, only allocations
    may come before a load nest: the prologue that loads ahead of the loop must not need
    anything else. Each load nest is a loop over the stages followed by a barrier."""
    where = f"loop {outer.var}" if outer is not None else "the kernel"
    if outer is not None and outer.kind != "serial":
        return f"its loop {outer.var} is {outer.kind}, not serial"
    if len({cb.depth for cb in cbs}) > 1:
        return f"the caches of {where} have different stage counts"
    depth = cbs[0].depth
    names = {cb.name for cb in cbs}
    head: list[kir.Stmt] = []
    loads: list[kir.ForLoop] = []
    k = 0
    while True:
        while k < len(body) and not any(_writes(body[k], n) for n in names):
            st = body[k]
            if isinstance(st, kir.Allocate):
                head.append(st)
            elif not isinstance(st, kir.BlockSync):  # a WAR barrier: each stage ends with one
                if not loads:
                    if outer is not None:
                        return f"{where} computes something before its load nest"
                    if any(_touches(st, n) for n in names):
                        return f"{where} reads it before its load nest"
                    head.append(st)
                else:
                    break
            k += 1
        if k >= len(body) or not any(_writes(body[k], n) for n in names):
            break
        if k + 1 >= len(body) or not isinstance(body[k + 1], kir.BlockSync):
            return f"{where} does not load it in one stage loop followed by a barrier"
        load = body[k]
        if not (isinstance(load, kir.ForLoop) and load.extent == depth and load.kind == "serial"):
            return f"its load nest in {where} is not a serial loop over its {depth} stages"
        mine = [n for n in names if _writes(load, n)]
        if len(mine) != 1:
            return f"one load nest in {where} fills several caches"
        cb = next(c for c in cbs if c.name == mine[0])
        for st in load.body:
            why = _not_a_copy(st, cb)
            if why is not None:
                return why
        loads.append(load)
        k += 2
    if len(loads) != len(cbs):
        return f"{where} does not load each cache in a stage loop of its own"
    compute = body[k] if k < len(body) else None
    if not (isinstance(compute, kir.ForLoop) and compute.extent == depth and compute.kind in ("serial", "unroll")):
        return f"what reads it in {where} is not one loop over its {depth} stages"
    tail = body[k + 1:]
    if any(_touches(st, n) for st in tail for n in names) or any(_writes(st, n) for st in compute.body for n in names):
        return f"{where} uses it outside the stage loop, or writes it there"
    return head, loads, compute, tail


def _not_a_copy(st: kir.Stmt, cb: CircularBuffer) -> str | None:
    """Why `st` is not part of a load nest that only copies global data into the cache."""
    if isinstance(st, kir.IndexDef):
        return None
    if isinstance(st, kir.Exec):
        call = st.call
        if _copy_into(st) == cb.name:
            assert isinstance(call, Call)
            width = ctype_bytes(call.targs[0].strip()) * int(call.targs[1])
            return None if width in (4, 8, 16) else f"a copy of {width} bytes (cp.async copies 4, 8 or 16)"
        return f"its load nest calls {call.fn}" if isinstance(call, Call) else "its load nest has a runtime call"
    if isinstance(st, kir.Assign):
        lhs = st.lhs
        if not (st.copy_ctype and isinstance(lhs, Access) and lhs.name == cb.name and isinstance(st.rhs, Access)):
            target = lhs.name if isinstance(lhs, Access | Var) else "a value"
            return f"its load nest computes {target}, not a plain copy into {cb.name}"
        width = ctype_bytes(st.copy_ctype)
        return None if width in (4, 8, 16) else f"{width}-byte element copies (cp.async copies 4, 8 or 16 bytes)"
    if isinstance(st, kir.ForLoop | kir.Scope | kir.IfThenElse):
        for child in kir.children(st):
            for s in child:
                why = _not_a_copy(s, cb)
                if why is not None:
                    return why
        return None
    return f"its load nest has a {type(st).__name__} statement"


def _walk_stmts(st: kir.Stmt) -> Iterator[kir.Stmt]:
    yield st
    for child in kir.children(st):
        for s in child:
            yield from _walk_stmts(s)


def _stores(s: kir.Stmt, name: str) -> bool:
    """`name[..] = ...` or `name[..] += ...`, or a call copying into `name` (its first argument
    `&name[..]`)."""
    if isinstance(s, kir.Assign | kir.AddTo):
        return isinstance(s.lhs, Access) and s.lhs.name == name
    if isinstance(s, kir.Exec) and isinstance(s.call, Call) and s.call.args:
        dst = s.call.args[0]
        return isinstance(dst, AddrOf) and isinstance(dst.x, Access) and dst.x.name == name
    return False


def _writes(st: kir.Stmt, name: str) -> bool:
    """Whether `st` stores into `name`: an assignment, or a copy call with it as destination."""
    return any(_stores(s, name) for s in _walk_stmts(st))


def _touches(st: kir.Stmt, name: str) -> bool:
    return any(kir.mentions(s, name) for s in _walk_stmts(st))


def _copy_into(st: kir.Stmt) -> str | None:
    """The array a `loadGeneric<T, N>(&X[..], ..)` statement copies into, else None."""
    call = st.call if isinstance(st, kir.Exec) else None
    if not (isinstance(call, Call) and call.fn == "loadGeneric" and call.args):
        return None
    dst = call.args[0]
    return dst.x.name if isinstance(dst, AddrOf) and isinstance(dst.x, Access) else None


def _async(st: kir.Stmt) -> kir.Stmt:
    """A copy of the load statement with its loadGeneric copies made asynchronous."""
    if isinstance(st, kir.Exec) and isinstance(st.call, Call):
        return kir.Exec(replace(st.call, fn="fsCpAsync")) if _copy_into(st) is not None else st
    if isinstance(st, kir.Assign):
        return kir.Exec(Call("fsCpAsync", (str(st.copy_ctype), "1"), (AddrOf(st.lhs), AddrOf(st.rhs))))
    if isinstance(st, kir.ForLoop):
        return kir.ForLoop(st.var, st.extent, st.kind, st.domain, [_async(s) for s in st.body], st.threads)
    if isinstance(st, kir.Scope):
        return kir.Scope([_async(s) for s in st.body])
    if isinstance(st, kir.IfThenElse):
        return kir.IfThenElse(st.cond, [_async(s) for s in st.then], [_async(s) for s in st.orelse])
    return st
