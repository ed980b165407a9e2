"""Fewer block barriers where fewer order the same accesses.

The lowering places a barrier after each shared-memory write that a later read needs (RAW) and
before each write that earlier reads must finish first (WAR); each barrier names the buffers it
fences (kir.BlockSync.raw / .war). A persistent kernel staging several row inputs in shared
memory then has, per row, a WAR and a RAW barrier around each input's fill: two barriers back
to back are one (`merge_adjacent_barriers`), and fills that do not touch each other's buffers
share one pair (`drop_fill_barriers`)."""

from __future__ import annotations

from engine.lower import kir


def _joined(a: kir.BlockSync, b: kir.BlockSync) -> kir.BlockSync:
    return kir.BlockSync("; ".join(r for r in (a.reason, b.reason) if r), a.raw | b.raw, a.war | b.war)


def _each_body(stmts: list[kir.Stmt], rewrite) -> int:
    """Apply `rewrite` to every nested statement list; the count it reports, summed."""
    n = 0
    for s in stmts:
        for inner in kir.children(s):
            kept, k = rewrite(inner)
            inner[:] = kept
            n += k
    return n


def merge_adjacent_barriers(stmts: list[kir.Stmt]) -> tuple[list[kir.Stmt], int]:
    """`stmts` with each run of consecutive BlockSyncs (in any nested body) made one, its
    reasons and fenced buffers joined; and how many barriers went."""
    out: list[kir.Stmt] = []
    dropped = 0
    for s in stmts:
        if isinstance(s, kir.BlockSync) and out and isinstance(out[-1], kir.BlockSync):
            out[-1] = _joined(out[-1], s)
            dropped += 1
            continue
        out.append(s)
    return out, dropped + _each_body(out, merge_adjacent_barriers)


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
        first, second, mid = out[i + 1:j], out[j + 1:k], out[j]
        assert isinstance(mid, kir.BlockSync)
        if (first and second and (mid.raw or mid.war)
                and not any(kir.synchronizes([st]) for st in (*first, *second))
                and not kir.words(second) & mid.raw and not kir.words(first) & mid.war):
            # The first barrier now orders the WAR accesses; the last one the RAW ones.
            last = out[k]
            assert isinstance(last, kir.BlockSync)
            kept = "; ".join(f"RAW: {n} in shared memory" for n in sorted(mid.raw))
            out[k] = kir.BlockSync("; ".join(r for r in (kept, last.reason) if r), mid.raw | last.raw, last.war)
            del out[j]
            dropped += 1
            continue
        i = j
    return out, dropped + _each_body(out, drop_fill_barriers)


def _next_barrier(stmts: list[kir.Stmt], start: int) -> int | None:
    return next((k for k in range(start, len(stmts)) if isinstance(stmts[k], kir.BlockSync)), None)
