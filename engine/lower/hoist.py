"""Loop-invariant element computations moved out of the loops that repeat them.

A tensor with a broadcast inner axis (a row's mean, `rstd * rstd * rstd`, a row sum divided by
the row's width) is computed inside the innermost loop of its consumer, once per element of
the row, though every iteration computes the same value. nvcc does not merge those copies
when each sits under its own predicate: a persistent kernel divided twice per element where
once per row is enough. Such a statement, `T[0] = rhs;` or `if (cond) { T[0] = rhs; }`
writing a one-element local array declared in the loop, moves with its declaration to just
before the loop when nothing it reads changes in the loop; statements it feeds can then move
too, and an outer loop's turn takes them further out. A brace scope is treated as a loop of
one iteration, so its invariant statements leave it for the loop around it.

Only arithmetic on values already in registers moves: a value moved out stays in a register
across the loop, where a read of global or shared memory left in the loop holds none between
its uses (a persistent kernel at its register limit spilled when its rows' per-row scalars,
read from shared memory, were moved out too). Not moved either: anything out of a loop that
waits for the block (a barrier or a block-wide call), a read of an array written in the loop,
a runtime call with effects (random numbers, atomics, block or grid calls), and a name the
scope outside already declares.
"""

from __future__ import annotations

from engine.lower import kir, kquery
from engine.lower.kexpr import Access, Call, Expr, Lit

# Words (lower case) of runtime calls whose result is not a function of their arguments alone,
# or that have effects: random numbers, atomics, block-, warp- and grid-wide calls, clocks.
_IMPURE = ("rng", "philox", "rand", "atomic", "block", "grid", "warp", "shfl", "sync", "clock", "nanosleep")


def hoist_invariants(body: list[kir.Stmt], memory: set[str]) -> tuple[list[kir.Stmt], int]:
    """`body` with invariant statements moved out of their loops and scopes; how many moved.
    `memory`: the kernel's arrays in global and shared memory (tensors, workspaces, shared
    buffers), whose reads stay where they are."""
    return _hoist_list(body, memory, _declared(body, (kir.IndexDef,)))


def _hoist_list(stmts: list[kir.Stmt], memory: set[str], indices: set[str]) -> tuple[list[kir.Stmt], int]:
    out: list[kir.Stmt] = []
    moved = 0
    declared = {s.name for s in stmts if isinstance(s, kir.Allocate | kir.Declare)}
    for s in stmts:
        for child in kir.children(s):
            child[:], n = _hoist_list(child, memory, indices)
            moved += n
        if isinstance(s, kir.ForLoop) and s.kind in ("serial", "unroll", "vectorize") or isinstance(s, kir.Scope):
            pre = _invariant_prefix(s, declared, memory, indices)
            moved += sum(1 for p in pre if not isinstance(p, kir.Allocate))
            declared |= {p.name for p in pre if isinstance(p, kir.Allocate)}
            out += pre
        out.append(s)
    return out, moved


def _identifiers(words: set[str]) -> set[str]:
    return {w for w in words if not w[0].isdigit()}


def _written(stmts: list[kir.Stmt], indices: set[str]) -> set[str]:
    """Names the statements may write: assigned and added-to arrays, and the arrays of a call
    statement (a copy, a cp.async: written through an address), but not the indices and
    builtins (`threadIdx.x`) their addresses are computed from."""
    out: set[str] = set()
    calls: set[str] = set()
    for s in kir.walk(stmts):
        if isinstance(s, kir.Assign):
            out.add(s.lhs.name) if isinstance(s.lhs, Access) else out.update(kquery.names(s.lhs))
        elif isinstance(s, kir.Exec):
            calls |= kquery.names(s.call)
        elif isinstance(s, kir.AddTo):
            out.add(s.lhs.name) if isinstance(s.lhs, Access) else out.update(kquery.names(s.lhs))
    return out | {n for n in calls if "." not in n and n not in indices}


_DECLARATIONS = (kir.Allocate, kir.Declare, kir.IndexDef, kir.ScalarDef, kir.Local)


def _declared(stmts: list[kir.Stmt], kinds: tuple[type, ...] = _DECLARATIONS) -> set[str]:
    """The loop counters of the statements, and the names their declarations of `kinds` make
    (by default every kind: arrays, vector temporaries, indices, scalars)."""
    out: set[str] = set()
    for s in kir.walk(stmts):
        if isinstance(s, kir.ForLoop):
            out |= {s.var, f"{s.var}_k"}
        elif isinstance(s, kinds):
            out.add(s.name)  # type: ignore[attr-defined]
    return out


def _scalar_assign(s: kir.Stmt) -> tuple[kir.Assign, Expr | None] | None:
    """`s` as (its one assignment of a `T[0]`, its guard or None)."""
    cond = None
    if isinstance(s, kir.IfThenElse) and not s.orelse and len(s.then) == 1:
        cond, s = s.cond, s.then[0]
    if not isinstance(s, kir.Assign) or not isinstance(s.lhs, Access) or s.lhs.index not in (0, Lit("0")):
        return None
    return s, cond


def _pure(e: Expr) -> bool:
    """Whether `e` calls nothing with effects: no runtime call (a Call's function or a Lit's
    text) names one of _IMPURE's words, whatever the case (fsRng, blockReduce)."""
    for n in kquery.walk(e):
        text = n.fn if isinstance(n, Call) else n.text if isinstance(n, Lit) else ""
        if any(w in text.lower() for w in _IMPURE):
            return False
    return True


def _invariant_prefix(loop: kir.ForLoop | kir.Scope, outer_declared: set[str], memory: set[str],
                      indices: set[str]) -> list[kir.Stmt]:
    """The invariant statements of `loop`'s body (removed from it), each after its array's
    declaration, in their order."""
    body = loop.body
    allocs = {s.name: s for s in body if isinstance(s, kir.Allocate) and s.memory == "local" and s.size == 1
              and s.init is None}
    own = {loop.var, f"{loop.var}_k"} if isinstance(loop, kir.ForLoop) else set()
    # Candidates first, on what each statement says alone: most loops have none, and then the
    # loop's body is not walked.
    candidates: list[tuple[kir.Stmt, str, set[str]]] = []
    for s in body:
        got = _scalar_assign(s)
        if got is None:
            continue
        a, cond = got
        name = a.lhs.name  # type: ignore[attr-defined]
        words = _identifiers(kquery.words(a.rhs) | (kquery.words(cond) if cond is not None else set()))
        if name not in allocs or name in outer_declared or words & own or words & memory or not _pure(a.rhs):
            continue  # a memory read stays: loaded again where it is used, it holds no register meanwhile
        candidates.append((s, name, words))
    if not candidates or kir.synchronizes(body):
        return []
    variant = _written(body, indices) | _declared(body) | own
    assigned: dict[str, int] = {}
    for s in kir.walk(body):
        if isinstance(s, kir.Assign):
            for n in kquery.names(s.lhs):
                assigned[n] = assigned.get(n, 0) + 1
    moved: list[kir.Stmt] = []
    hoisted: set[str] = set()
    for s, name, words in candidates:
        if assigned.get(name) != 1 or words & (variant - hoisted):
            continue
        moved.append(s)
        hoisted.add(name)
    if not moved:
        return []
    keep = {id(s) for s in moved}
    loop.body = [s for s in body if id(s) not in keep and not (isinstance(s, kir.Allocate) and s.name in hoisted)]
    return [allocs[n] for n in (s.name for s in body if isinstance(s, kir.Allocate)) if n in hoisted] + moved
