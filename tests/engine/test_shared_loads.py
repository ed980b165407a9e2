"""A kernel that loads the same input elements twice under the same predicate keeps one
register copy (engine.lower.shared_loads)."""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from engine import loads_fusion
from engine.codegen.statements import stmt_lines
from engine.compile import compile_fusion
from engine.lower import kir
from engine.lower.cexpr import Term, add, mul
from engine.lower.kexpr import Access, Add, AddrOf, Call, Cmp, Expr, Lit, Var
from engine.lower.shared_loads import share_loads

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"


I4 = mul("i", 4)


def _load(dst: str, src: str, index: Term, bound: int | None) -> kir.Stmt:
    call = kir.Exec(Call("loadGeneric", ("float", "4"), (AddrOf(Access(dst, 0)), AddrOf(Access(src, index)))))
    return kir.IfThenElse(Cmp(Var("i"), "<", bound), [call]) if bound else call


def _sum(*reads: tuple[str, int]) -> Expr:
    terms = [Access(n, k) for n, k in reads]
    return functools.reduce(Add, terms)  # type: ignore[arg-type]


def _store(value: Expr) -> kir.Assign:
    return kir.Assign(Access("T9", Var("i")), value)


def _alloc(name: str, size: int = 4) -> kir.Allocate:
    return kir.Allocate(name, "float", size, "local")


def _text(body: list[kir.Stmt]) -> str:
    return "\n".join(ln for s in body for ln in stmt_lines(s, 0))


def test_a_repeated_load_is_dropped_and_its_array_read_from_the_first():
    body: list[kir.Stmt] = [
        _alloc("T2"), _alloc("T3"), _alloc("T4"),
        _load("T2", "T0", I4, 8),
        _load("T3", "T0", I4, 8),
        _load("T4", "T0", add(I4, 32), 8),  # other elements: kept
        _store(_sum(("T2", 0), ("T3", 1), ("T4", 2))),
    ]
    out, notes = share_loads(body, {"T0"})
    text = _text(out)
    assert notes == ["T3: the same loads as T2, read from it"]
    assert "T3" not in text
    assert text.count("loadGeneric") == 2
    assert "T9[i] = T2[0] + T2[1] + T4[2];" in text


def test_loads_that_differ_or_write_twice_are_kept():
    body: list[kir.Stmt] = [
        _alloc("T2"), _alloc("T3"), _alloc("T5"), _alloc("T6"), _alloc("T7", 8),
        _load("T2", "T0", I4, 8),
        _load("T3", "T0", I4, 7),  # another predicate
        _load("T5", "T1", I4, 8),  # T1 is not a read-only input
        _load("T6", "T1", I4, 8),
        _load("T7", "T0", I4, 8),  # another array size
        _store(_sum(("T2", 0), ("T3", 0), ("T5", 0), ("T6", 0), ("T7", 0))),
    ]
    before = _text(body)
    out, notes = share_loads(body, {"T0"})
    assert notes == []
    assert _text(out) == before
    rewritten: list[kir.Stmt] = [
        _alloc("T2"), _alloc("T3"),
        _load("T2", "T0", I4, None),
        _load("T3", "T0", I4, None),
        kir.Assign(Access("T3", 0), Lit("1.0f")),  # T3 is written again: not a copy of T2
        _store(_sum(("T2", 0), ("T3", 0))),
    ]
    assert share_loads(rewritten, {"T0"})[1] == []


def test_a_use_outside_the_loads_scope_keeps_the_load():
    inner: list[kir.Stmt] = [_load("T2", "T0", I4, None), _load("T3", "T0", I4, None)]
    body: list[kir.Stmt] = [_alloc("T2"), _alloc("T3"), kir.Scope(inner), _store(Access("T3", 0))]
    assert share_loads(body, {"T0"})[1] == []


def test_the_chunked_silu_backward_loads_its_first_half_once_and_matches_the_reference():
    path = SCRIPTS / "moe_chunk_silu_mul_bwd_3d_pad_add_bf16.py"
    fd = loads_fusion(path.read_text(), filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs)
    (seg,) = [s for s in cf.segments if s.is_kernel]
    assert "the same loads as" in seg.stages.get("shared_loads", "")
    got = cf.run(xs, backend="emulate")
    want = cf.run(xs, backend="reference")
    for g, w in zip(got, want):
        torch.testing.assert_close(g.float(), w.float(), rtol=1e-2, atol=1e-2)
