"""Circular buffering: a shared-memory cache loaded with cp.async, a stage ahead of its use.

TensorView.circular_buffer(D) marks a shared-memory copy of a global tensor whose first axis
right of its compute-at position is a stage axis of extent D, kept in its allocation: the
cache holds D stages. Without this pass the loop at the compute-at position loads all D
stages, waits at a barrier, then computes them one after another. With it, the loads run
D - 1 stages ahead of the computation, across iterations of that loop:

    load stages 0 .. D-2                          (prologue, one cp.async group each)
    for n:                                        (the loop at the compute-at position)
      for s < D:                                  (the consumers' stage loop)
        load stage n*D + s + D-1, if there is one; commit
        wait until stage n*D + s has landed; __syncthreads
        compute stage s; __syncthreads           (nobody reads the slot when it is loaded again)

The statements of the load nest are reused as they are: a load ahead re-declares the loop
indices it depends on in an inner scope, and its element copies become fsCpAsync.

pipeline._circular_buffers checks on the IR that the consumers' loop right of the cache's
compute-at position is the cache's stage axis; this pass then needs the kernel-IR shape that
pipeline._assemble makes for such a loop: the cache's allocation, the WAR barrier, the stage
loop of the load nest, the RAW barrier, then the consumers' stage loop. A loop of another
shape keeps its plain loads, and Lowered.stages["circular_buffer"] says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.lower import kir


@dataclass(frozen=True)
class CircularBuffer:
    name: str  # the cache's kernel name, e.g. "T7"
    depth: int  # stages: the extent of its stage axis


_COPY = re.compile(r"loadGeneric<([^,<>]+), (\d+)>\(&(\w+)\[")
_INDEX_DEF = re.compile(r"const nvfuser_index_t \w+ = ")
_CTYPE_BYTES = {"float": 4, "double": 8, "__half": 2, "__bfloat": 2, "int": 4, "int64_t": 8,
                "nvfuser_index_t": 8, "int8_t": 1, "uint8_t": 1, "bool": 1}


def circular_buffer(body: list[kir.Stmt], bufs: dict[str, CircularBuffer], notes: list[str]) -> list[kir.Stmt]:
    """`body` with every loop that fills a buffer of `bufs` pipelined; `notes` gets one line
    per pipelined buffer and one per loop left as it was, with the reason."""
    out: list[kir.Stmt] = []
    for st in body:
        for child in _children(st):
            child[:] = circular_buffer(child, bufs, notes)
        cb = _buffer_of(st, bufs) if isinstance(st, kir.ForLoop) else None
        pipelined = _pipeline(st, cb, notes) if cb is not None else None
        out.extend(pipelined if pipelined is not None else [st])
    return out


def _children(st: kir.Stmt) -> list[list[kir.Stmt]]:
    if isinstance(st, kir.ForLoop | kir.Scope):
        return [st.body]
    if isinstance(st, kir.IfThenElse):
        return [st.then, st.orelse]
    return []


def _buffer_of(loop: kir.ForLoop, bufs: dict[str, CircularBuffer]) -> CircularBuffer | None:
    for st in loop.body:
        if isinstance(st, kir.Allocate) and st.memory == "shared" and st.name in bufs:
            return bufs[st.name]
    return None


def _pipeline(loop: kir.ForLoop, cb: CircularBuffer, notes: list[str]) -> list[kir.Stmt] | None:
    parts = _parts(loop, cb)
    if isinstance(parts, str):
        notes.append(f"{cb.name}: not circular-buffered: {parts}")
        return None
    head, load, compute, tail = parts
    d, n, s = cb.depth, loop.extent, compute.var
    steps = n * d

    def load_step(step: str) -> kir.Stmt:
        # The load nest's stage body with the indices of `step` in scope.
        return kir.Scope([kir.Raw(f"const nvfuser_index_t {loop.var} = ({step}) / {d};"),
                          kir.Raw(f"const nvfuser_index_t {load.var} = ({step}) % {d};"),
                          *[_async(st) for st in load.body]])

    # Before the loop the cache's name is not declared yet: the prologue declares it too.
    alloc = next(st for st in head if isinstance(st, kir.Allocate) and st.name == cb.name)
    prologue: list[kir.Stmt] = []
    for k in range(min(d - 1, steps)):
        prologue += [kir.Scope([alloc, load_step(str(k))]), kir.Raw("fsCpAsyncCommit();")]
    ahead = f"fs_{cb.name}_ahead"
    stage_body = [
        kir.Scope([kir.Raw(f"const nvfuser_index_t {ahead} = {loop.var} * {d} + {s} + {d - 1};"),
                   kir.IfThenElse(f"{ahead} < {steps}", [load_step(ahead)])]),
        kir.Raw("fsCpAsyncCommit();"), kir.Raw(f"fsCpAsyncWait<{d - 1}>();"),
        kir.BlockSync(f"RAW: stage {s} of {cb.name} has landed"), *compute.body,
        kir.BlockSync(f"WAR: stage {s} of {cb.name} is loaded again"),
    ]
    stage = kir.ForLoop(s, d, "pipelined", compute.domain, stage_body, compute.threads)
    notes.append(f"{cb.name}: circular buffer of {d} stages over loops {loop.var} x {s} ({steps} steps), "
                 f"loaded {d - 1} stage(s) ahead by cp.async")
    return [*prologue, kir.ForLoop(loop.var, n, "pipelined", loop.domain, [*head, stage, *tail], loop.threads)]


def _parts(loop: kir.ForLoop, cb: CircularBuffer
           ) -> tuple[list[kir.Stmt], kir.ForLoop, kir.ForLoop, list[kir.Stmt]] | str:
    """(the allocations, the load nest's stage loop, the consumers' stage loop, what follows
    it), or why the loop has another shape."""
    if loop.kind != "serial":
        return f"its loop {loop.var} is {loop.kind}, not serial"
    body = loop.body
    k = 0
    head: list[kir.Stmt] = []
    while k < len(body) and isinstance(body[k], kir.Allocate | kir.BlockSync):
        if isinstance(body[k], kir.Allocate):
            head.append(body[k])
        k += 1  # the WAR barrier is dropped: each stage ends with one
    if not any(isinstance(st, kir.Allocate) and st.name == cb.name for st in head):
        return f"loop {loop.var} computes something before its allocation and load nest"
    if k + 1 >= len(body) or not isinstance(body[k + 1], kir.BlockSync):
        return f"loop {loop.var} does not load it in one stage loop followed by a barrier"
    load = body[k]
    if not (isinstance(load, kir.ForLoop) and load.extent == cb.depth and load.kind == "serial"):
        return f"its load nest in loop {loop.var} is not a serial loop over its {cb.depth} stages"
    for st in load.body:
        why = _not_a_copy(st, cb)
        if why is not None:
            return why
    k += 2
    while k < len(body) and isinstance(body[k], kir.Allocate):
        head.append(body[k])
        k += 1
    compute = body[k] if k < len(body) else None
    if not (isinstance(compute, kir.ForLoop) and compute.extent == cb.depth and compute.kind in ("serial", "unroll")):
        return f"what reads it in loop {loop.var} is not one loop over its {cb.depth} stages"
    tail = body[k + 1:]
    if any(_touches(st, cb.name) for st in tail) or any(_writes(st, cb.name) for st in compute.body):
        return f"loop {loop.var} uses it outside the stage loop, or writes it there"
    return head, load, compute, tail


def _not_a_copy(st: kir.Stmt, cb: CircularBuffer) -> str | None:
    """Why `st` is not part of a load nest that only copies global data into the cache."""
    if isinstance(st, kir.Raw):
        m = _COPY.match(st.text.strip())
        if m is not None and m.group(3) == cb.name:
            width = _CTYPE_BYTES.get(m.group(1).strip(), 0) * int(m.group(2))
            return None if width in (4, 8, 16) else f"a copy of {width} bytes (cp.async copies 4, 8 or 16)"
        if _INDEX_DEF.match(st.text.strip()):
            return None
        return f"its load nest has `{st.text.strip()}`"
    if isinstance(st, kir.ForLoop | kir.Scope | kir.IfThenElse):
        for child in _children(st):
            for s in child:
                why = _not_a_copy(s, cb)
                if why is not None:
                    return why
        return None
    return f"its load nest has a {type(st).__name__} statement"


def _writes(st: kir.Stmt, name: str) -> bool:
    """Whether `st` stores into `name`: an assignment, or a copy call with it as destination."""
    store = re.compile(rf"\b{name}\[[^\]]*\]\s*=[^=]|>\(&{name}\[")
    return any(store.search(line) for line in st.lines(0))


def _touches(st: kir.Stmt, name: str) -> bool:
    return any(re.search(rf"\b{name}\b", line) for line in st.lines(0))


def _async(st: kir.Stmt) -> kir.Stmt:
    """A copy of the load statement with its loadGeneric copies made asynchronous."""
    if isinstance(st, kir.Raw):
        return kir.Raw(st.text.replace("loadGeneric<", "fsCpAsync<", 1)) if _COPY.match(st.text.strip()) else st
    if isinstance(st, kir.ForLoop):
        return kir.ForLoop(st.var, st.extent, st.kind, st.domain, [_async(s) for s in st.body], st.threads)
    if isinstance(st, kir.Scope):
        return kir.Scope([_async(s) for s in st.body])
    if isinstance(st, kir.IfThenElse):
        return kir.IfThenElse(st.cond, [_async(s) for s in st.then], [_async(s) for s in st.orelse])
    return st
