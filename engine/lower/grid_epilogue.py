"""The epilogue of a cooperative grid reduction, run per share instead of in the last block.

A grouped grid reduction in a co-resident grid (gridReduceGroupSync) publishes every block's
partials, waits at a grid barrier and lets every block combine a share of them; then the last
block to finish gathers all the totals and alone runs the code after the call (the epilogue:
write-backs, casts, the output's stores). The count of finished shares and that one block's
loads and stores are a serial tail of the kernel, one block working while the others have
finished. Here each block instead combines whole thread segments (every accumulator
element of each) and runs the epilogue for them itself, as the threads they belong to:

    const FsShare fs_share = gridReduceGroupShares<...>(...);
    for (unsigned fs_v = fs_share.v0 + <thread rank>; fs_v < fs_share.v1; fs_v += <threads>) {
      const uint3 fs_vt = fsVirtualThread<...>(fs_v);   // the segment's thread, reduced dims 0
      fsShareLoad(T9_acc, ..., fs_share, fs_v);         // its totals
      T9_last = true;
      <the epilogue, threadIdx read as fs_vt>
    }

That is only the same program when the epilogue is code of one thread: it must not wait for
the block or use shared memory, must read no register the thread computed before the call
(the thread running a segment is not the one that accumulated it), must not depend on the
reduced block or thread indices (the last block was any block, and its threads along the
reduced dimensions held the same totals), and must do nothing outside the reduction's
flag. A kernel whose epilogue is not of that kind keeps the gather, and the stage
"grid_epilogue" says why.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from engine.lower import kir, kquery
from engine.lower.kexpr import Access, Call, Cmp, Expr, Lit, Var

_THREAD_VARS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_BLOCK_VARS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
# Text that means the code needs the whole block, shared memory or another reduction.
_BLOCK_WIDE = ("__syncthreads", "smem", "Reduce", "Welford", "fsCpAsync", "__shfl", "blockDim", "Broadcast")
_OUTSIDE = "it does work outside its grid reduction's flag"


@dataclass(frozen=True)
class GridSync:
    """A gridReduceGroupSync call as lowering emitted it (grid_reduce.grid_reduction)."""

    flag: str  # "T9_last"
    acc: str  # the accumulator array, "T9_acc"
    blocks: tuple[bool, bool, bool]  # reduced grid dimensions
    threads: tuple[bool, bool, bool]  # reduced block dimensions
    targs: tuple[str, ...]  # the call's template arguments
    args: tuple[int | Expr, ...]  # the call's arguments
    work: Expr  # the work buffer pointer


@dataclass
class ShareCall(kir.Stmt):
    """gridReduceGroupShares in place of a gridReduceGroupSync call: the block's share."""

    sync: GridSync
    share: str  # the FsShare variable


@dataclass
class ShareLoop(kir.Stmt):
    """The loop over the thread segments of the block's share (see the module docstring):
    every call's shares are the same segments (one block and grid shape)."""

    calls: list[ShareCall]
    body: list[kir.Stmt]


def share_epilogue(body: list[kir.Stmt], syncs: dict[str, GridSync],
                   globals_: set[str]) -> tuple[list[kir.Stmt], list[str]]:
    """`body` with the epilogues of its cooperative grid reductions run per share, where that
    is the same program; and notes on what was done or why not. `globals_`: the kernel's
    parameter and workspace names."""
    if not syncs:
        return body, []
    at = [k for k, s in enumerate(body) if _assigned(s) in syncs]
    names = ", ".join(sorted(syncs))
    if len(at) != len(syncs):
        return body, [f"{names}: the epilogue stays in the last block: a grid reduction inside a loop"]
    calls = [syncs[_assigned(body[k])] for k in at]  # type: ignore[index]
    if len({c.targs for c in calls}) != 1:
        return body, [f"{names}: the epilogue stays in the last block: the grid reductions reduce "
                      "different dimensions"]
    prep, epilogue = _split(body[at[0] + 1:], calls)
    last = body[at[-1] + 1:]
    why = (_OUTSIDE if any(all(s is not e for e in epilogue) for s in last)
           else _refusal(body[:at[0]], prep, epilogue, calls, globals_))
    if why is not None:
        return body, [f"{names}: the epilogue stays in the last block: {why}"]
    share_calls = {c.flag: ShareCall(c, f"fs_share{k}") for k, c in enumerate(calls)}
    middle = [share_calls[_assigned(s)] if _assigned(s) in share_calls else s for s in prep]  # type: ignore[index]
    loop = ShareLoop(list(share_calls.values()), [_rename(s) for s in epilogue])
    return [*body[:at[0]], share_calls[calls[0].flag], *middle, loop], [
        f"{c.flag}: every block runs the epilogue of the thread segments it combined" for c in calls]


def _split(after: list[kir.Stmt], calls: list[GridSync]) -> tuple[list[kir.Stmt], list[kir.Stmt]]:
    """The statements after the first call: the later calls and what prepares them (in
    order), and the epilogues (the statements that read a call's flag), which move after
    the last call."""
    flags = [c.flag for c in calls]
    prep: list[kir.Stmt] = []
    epilogue: list[kir.Stmt] = []
    for s in after:
        is_call = _assigned(s) in flags
        (epilogue if not is_call and not kir.words([s]).isdisjoint(flags) else prep).append(s)
    return prep, epilogue


def _refusal(before: list[kir.Stmt], prep: list[kir.Stmt], epilogue: list[kir.Stmt], calls: list[GridSync],
             globals_: set[str]) -> str | None:
    """Why running `epilogue` per share, after every call, would not be the same program."""
    if not epilogue:
        return "there is none"
    words = _words(epilogue)
    wide = next((w for w in _BLOCK_WIDE if any(w in word for word in words)), None)
    if wide is not None:
        return f"it needs the whole block ({wide})"
    sync = calls[0]
    for var, reduced in zip(_THREAD_VARS, sync.threads):
        if reduced and _reads(epilogue, var, but_zero_test=True):
            return f"it reads {var}, a reduced dimension"
    for var, reduced in zip(_BLOCK_VARS, sync.blocks):
        if reduced and _reads(epilogue, var):
            return f"it reads {var}, a reduced dimension"
    local = _declared(epilogue) | _unused_before([*before, *prep], calls)
    allowed = {c.flag for c in calls} | {c.acc for c in calls} | globals_ | local
    stale = sorted(n for n in kir.words(epilogue) if _is_tensor(n) and n not in allowed)
    if stale:
        return f"it reads {', '.join(stale)}, computed per thread before the grid reduction"
    if not all(_flagged(s, [c.flag for c in calls], local) for s in epilogue):
        return _OUTSIDE
    moved = sorted(local & kir.words(prep))
    if moved:
        return f"{', '.join(moved)} would move after a later grid reduction that reads it"
    return None


def _assigned(s: kir.Stmt) -> str | None:
    """The variable `s` assigns, where it is an assignment to a variable (a flag)."""
    return s.lhs.name if isinstance(s, kir.Assign) and isinstance(s.lhs, Var) else None


def _words(stmts: list[kir.Stmt]) -> set[str]:
    """The words the statements print (kir.words), with `smem` where they place an array in
    shared memory and the block's linear thread index's where a loop is block-strided."""
    out = kir.words(stmts)
    for s in kir.walk(stmts):
        if isinstance(s, kir.Allocate) and s.memory == "shared":
            out.add("smem")
        elif isinstance(s, kir.ForLoop) and s.kind == "block_strided":
            out |= kquery.words(kir.TID)
    return out


def _reads(stmts: list[kir.Stmt], var: str, but_zero_test: bool = False) -> bool:
    """Whether the statements read the thread or block index `var` (`threadIdx.x`): as a
    variable of their expressions, in their C fragments or text, or as the start of a
    block-strided loop; with `but_zero_test`, a test `var == 0` is not a read."""
    for s in kir.walk(stmts):
        if isinstance(s, kir.ForLoop) and s.kind == "block_strided" and var in kquery.names(kir.TID):
            return True
        text = s.text if isinstance(s, kir.Comment) else s.reason if isinstance(s, kir.BlockSync) else ""
        if var in _unless_tested(text, var, but_zero_test):
            return True
        if any(_reads_expr(e, var, but_zero_test) for e in kir.exprs(s)):
            return True
        if isinstance(s, kir.Allocate) and s.init is not None and _reads_expr(s.init, var, but_zero_test):
            return True
    return False


def _unless_tested(text: str, var: str, but_zero_test: bool) -> str:
    return text.replace(f"{var} == 0", "") if but_zero_test else text


def _reads_expr(e: int | Expr, var: str, but_zero_test: bool) -> bool:
    if not isinstance(e, Expr):
        return False
    if but_zero_test and isinstance(e, Cmp) and e.lhs == Var(var) and e.op == "==" and e.rhs == 0:
        return False
    if isinstance(e, Var):
        return var in e.name
    text = e.text if isinstance(e, Lit) else " ".join([e.fn, *e.targs]) if isinstance(e, Call) else ""
    if var in _unless_tested(text, var, but_zero_test):
        return True
    return any(_reads_expr(c, var, but_zero_test) for c in e.children())


def _is_tensor(word: str) -> bool:
    """Whether `word` names a tensor or one of its buffers (T9, T9_acc, T9_vec)."""
    return len(word) > 1 and word[0] == "T" and word[1].isdigit()


def _declared(stmts: list[kir.Stmt]) -> set[str]:
    """Local arrays the statements declare themselves (kir allocations, or vector temporaries)."""
    return {s.name for s in kir.walk(stmts)
            if isinstance(s, kir.Allocate) and s.memory == "local" or isinstance(s, kir.Declare)}


def _unused_before(before: list[kir.Stmt], calls: list[GridSync]) -> set[str]:
    """Local buffers allocated before the calls but never touched there: the epilogues' own."""
    names = {s.name for s in before if isinstance(s, kir.Allocate) and s.memory == "local"}
    used = kir.words([s for s in before if not isinstance(s, kir.Allocate)])
    return names - used - {c.acc for c in calls}


def _flagged(s: kir.Stmt, flags: list[str], local: set[str]) -> bool:
    """Whether every statement with an effect outside `local` arrays in `s` runs only where
    one of the `flags` holds."""
    if isinstance(s, kir.IfThenElse):
        if not s.orelse and any(Var(f) in kquery.conjuncts(s.cond) for f in flags):
            return True
        return all(_flagged(x, flags, local) for x in [*s.then, *s.orelse])
    if isinstance(s, kir.Allocate | kir.Comment | kir.Declare):
        return True
    if isinstance(s, kir.Assign):
        return isinstance(s.lhs, Access | Var) and s.lhs.name in local
    if isinstance(s, kir.ForLoop | kir.Scope):
        return all(_flagged(x, flags, local) for x in s.body)
    return False


def _rename(s: kir.Stmt) -> kir.Stmt:
    """`s` with the thread index read from the virtual thread `fs_vt`."""
    changes = {}
    for f in fields(s):  # type: ignore[arg-type]
        v = getattr(s, f.name)
        if isinstance(v, str):
            changes[f.name] = v.replace("threadIdx.", "fs_vt.")
        elif isinstance(v, kir.Expr):
            changes[f.name] = kquery.replace_text(v, "threadIdx.", "fs_vt.")
        elif isinstance(v, list):
            changes[f.name] = [_rename(x) if isinstance(x, kir.Stmt) else x for x in v]
    return replace(s, **changes)  # type: ignore[type-var]
