"""Barriers of the kernel IR (engine.lower.barriers): two back to back are one, and fills of
shared memory fenced one by one share one pair when nothing between them needs the middle
barrier."""

from __future__ import annotations

from engine.codegen.statements import stmt_lines
from engine.lower import kir
from engine.lower.barriers import drop_fill_barriers, merge_adjacent_barriers
from engine.lower.kexpr import Access, AddrOf, Call, Lit, Var


def _fill(name: str, src: str) -> kir.Stmt:
    i = Var("i")
    return kir.Scope([kir.Exec(Call("loadGeneric", ("float", "4"), (AddrOf(Access(name, i)), AddrOf(Access(src, i)))))])


def _war(n: str) -> kir.BlockSync:
    return kir.BlockSync(f"WAR: {n} in shared memory", war=frozenset({n}))


def _raw(n: str) -> kir.BlockSync:
    return kir.BlockSync(f"RAW: {n} in shared memory", raw=frozenset({n}))


def _syncs(stmts: list[kir.Stmt]) -> int:
    return sum("__syncthreads" in line for s in stmts for line in stmt_lines(s, 0))


def test_barriers_back_to_back_become_one_inside_loops_too() -> None:
    body = [_war("T1"), _fill("T1", "T0"), _raw("T1"), _war("T2"), _fill("T2", "T0"), _raw("T2")]
    loop = kir.ForLoop("i", 16, "serial", "iS0", body)
    (out,), n = merge_adjacent_barriers([loop])
    assert n == 1 and _syncs(out.body) == 3
    assert "RAW: T1 in shared memory; WAR: T2 in shared memory" in "\n".join(stmt_lines(out, 0))


def test_independent_fills_share_one_pair_of_barriers() -> None:
    body = [_war("T1"), _fill("T1", "T0"), _raw("T1"), _war("T2"), _fill("T2", "T3"), _raw("T2"),
            _war("T4"), _fill("T4", "T5"), _raw("T4"), kir.Assign(Var("x"), Lit("T1[0] + T2[0] + T4[0]"))]
    body, _ = merge_adjacent_barriers(body)
    out, n = drop_fill_barriers(body)
    assert n == 2 and _syncs(out) == 2
    text = "\n".join(line for s in out for line in stmt_lines(s, 0))
    # All three fills between the first barrier and the one before the reads.
    assert text.index("&T1[i]") < text.index("&T2[i]") < text.index("&T4[i]") < text.rindex("__syncthreads")
    assert text.rindex("__syncthreads") < text.index("x = T1[0]")


def test_a_fill_that_reads_what_the_previous_one_wrote_keeps_its_barrier() -> None:
    body = [_war("T1"), _fill("T1", "T0"), _raw("T1"), _war("T2"), _fill("T2", "T1"), _raw("T2")]
    body, _ = merge_adjacent_barriers(body)
    out, n = drop_fill_barriers(body)
    assert n == 0 and _syncs(out) == 3


def test_a_block_reduction_between_fills_keeps_the_barriers() -> None:
    body = [_war("T1"), _fill("T1", "T0"), _raw("T1"),
            kir.Assign(Var("s"), Call("blockAllReduce", ("true", "false", "false"), (Var("v"), Var("add"), Var("smem")))),
            _war("T2"),
            _fill("T2", "T3"), _raw("T2")]
    out, n = drop_fill_barriers(body)
    assert n == 0 and _syncs(out) == 4
