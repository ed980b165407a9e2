"""The kernel-IR passes (engine.lower.kir_passes): one ordered table, run by one loop that
records each pass's notes under its stage name."""

from __future__ import annotations

from engine.codegen.statements import stmt_lines
from engine.ir.fusion import Fusion
from engine.lower import kir
from engine.lower.index import Extents
from engine.lower.kexpr import Access, Var
from engine.lower.kir_passes import PASSES, PassContext, run_passes


def _ctx() -> PassContext:
    return PassContext(Fusion(), Extents({}), (), {}, set(), set())


def test_passes_run_in_the_order_of_their_stages() -> None:
    assert [name for name, _ in PASSES] == ["circular_buffer", "grid_epilogue", "shared_loads", "sync", "unroll",
                                         "hoist"]


def test_notes_append_to_a_stage_already_recorded_and_quiet_passes_record_nothing() -> None:
    war = kir.BlockSync("WAR: T1 in shared memory", war=frozenset({"T1"}))
    raw = kir.BlockSync("RAW: T1 in shared memory", raw=frozenset({"T1"}))
    stages = {"sync": "sync around T1 in shared memory\n"}
    body = run_passes([war, raw, kir.Assign(Var("x"), Access("T1", 0))], _ctx(), stages)
    assert sum("__syncthreads" in line for s in body for line in stmt_lines(s, 0)) == 1
    assert stages == {"sync": "sync around T1 in shared memory\n1 barrier(s) merged into a neighbouring one\n"}
