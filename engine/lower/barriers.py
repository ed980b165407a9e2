"""Block barriers back to back are one barrier.

The lowering places a barrier after each shared-memory write that a later read needs (RAW) and
before each write that earlier reads must finish first (WAR). A persistent kernel staging
several row inputs in shared memory then has the RAW barrier of one next to the WAR barrier of
the next, two barriers where one orders the same accesses: nothing runs between them."""

from __future__ import annotations

import re

from engine.lower import kir


def merge_adjacent_barriers(stmts: list[kir.Stmt]) -> tuple[list[kir.Stmt], int]:
    """`stmts` with each run of consecutive BlockSyncs (in any nested body) made one, its
    reasons joined; and how many barriers went."""
    out: list[kir.Stmt] = []
    dropped = 0
    for s in stmts:
        if isinstance(s, kir.BlockSync) and out and isinstance(out[-1], kir.BlockSync):
            prev = out[-1]
            out[-1] = kir.BlockSync("; ".join(r for r in (prev.reason, s.reason) if r))
            dropped += 1
            continue
        for attr in ("body", "then", "orelse"):
            inner = getattr(s, attr, None)
            if isinstance(inner, list) and inner:
                merged, n = merge_adjacent_barriers(inner)
                setattr(s, attr, merged)
                dropped += n
        out.append(s)
    return out, dropped


def _mentions(stmt: kir.Stmt, names: set[str]) -> bool:
    text = "\n".join(stmt.lines(0))
    return any(re.search(rf"\b{n}\b", text) for n in names)


def drop_fill_barriers(stmts: list[kir.Stmt]) -> tuple[list[kir.Stmt], int]:
    """Between two runs of statements each fenced by barriers (barrier, X, barrier, Y, barrier),
    the middle barrier orders X's shared writes (its RAW buffers) before later reads, which the
    last barrier does too when Y does not touch them, and earlier reads of Y's buffers (its WAR
    buffers) before Y writes them, which the first barrier does too when X does not touch them:
    it goes, and the fills of a persistent kernel's row inputs share one pair of barriers, as
    nvFuser loads them. Runs holding a block-wide call keep their barriers."""
    out = list(stmts)
    dropped = 0
    i = _next_barrier(out, 0)
    while i is not None:
        j = _next_barrier(out, i + 1)
        k = _next_barrier(out, j + 1) if j is not None else None
        if j is None or k is None:
            break
        first, second = out[i + 1:j], out[j + 1:k]
        reason = out[j].reason
        raw = {n for kind, n in _FENCED.findall(reason) if kind == "RAW"}
        war = {n for kind, n in _FENCED.findall(reason) if kind == "WAR"}
        if (first and second and raw | war
                and not any(kir._synchronizes([st]) for st in (*first, *second))
                and not any(_mentions(st, raw) for st in second)
                and not any(_mentions(st, war) for st in first)):
            # The first barrier now orders the WAR accesses; the last one the RAW ones.
            kept = "; ".join(f"RAW: {n} in shared memory" for n in sorted(raw))
            out[k] = kir.BlockSync("; ".join(r for r in (kept, out[k].reason) if r))
            del out[j]
            dropped += 1
            continue
        i = j
    for st in out:
        for attr in ("body", "then", "orelse"):
            inner = getattr(st, attr, None)
            if isinstance(inner, list) and inner:
                kept, n = drop_fill_barriers(inner)
                setattr(st, attr, kept)
                dropped += n
    return out, dropped


_FENCED = re.compile(r"(RAW|WAR): (\w+) in shared memory")


def _next_barrier(stmts: list[kir.Stmt], start: int) -> int | None:
    return next((k for k in range(start, len(stmts)) if isinstance(stmts[k], kir.BlockSync)), None)
