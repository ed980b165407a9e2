"""Serial loops that index a local array are unrolled whole (engine.lower.unroll): an index
ptxas cannot resolve at compile time puts the whole array in local memory."""

from __future__ import annotations

from engine import load_fusion
from engine.codegen.statements import stmt_lines
from engine.compile import compile_fusion
from engine.lower import kir
from engine.lower.cexpr import add, mod, mul
from engine.lower.kexpr import Access, Add, Lit, Var
from engine.lower.unroll import MAX_REGISTER_ARRAY, unroll_local_indexing


def _loop(var: str, extent: int, body: list[kir.Stmt]) -> kir.ForLoop:
    return kir.ForLoop(var, extent, "serial", var, body)


def test_a_loop_indexing_a_local_array_is_unrolled_and_others_are_not():
    index = add(mul("i0", 8), "i1")
    inner = _loop("i1", 8, [kir.Assign(Access("T1", index), Add(Access("T2", 0), Lit("1.0f")))])
    outer = _loop("i0", 4, [inner])
    plain = _loop("i2", 16, [kir.Assign(Access("T3", Var("i2")), Access("T2", 0))])  # T3: a global tensor
    body: list[kir.Stmt] = [kir.Allocate("T1", "float", 32, "local"), kir.Allocate("T2", "float", 1, "local"),
                            outer, plain]
    marked = unroll_local_indexing(body)
    assert (outer.kind, inner.kind, plain.kind) == ("unroll", "unroll", "serial")
    assert marked == ["i0 (4)", "i1 (8)"]
    assert "#pragma unroll\n" in "\n".join(stmt_lines(outer, 0)) + "\n"


def test_arrays_and_loops_too_long_for_registers_are_left_alone():
    n = MAX_REGISTER_ARRAY + 1
    big = _loop("i0", n, [kir.Assign(Access("T1", Var("i0")), Lit("0.0f"))])
    long_loop = _loop("i1", 4096, [kir.Assign(Access("T2", mod("i1", 4)), Lit("0.0f"))])
    body: list[kir.Stmt] = [kir.Allocate("T1", "float", n, "local"), kir.Allocate("T2", "float", 4, "local"),
                            big, long_loop]
    assert unroll_local_indexing(body) == []
    assert (big.kind, long_loop.kind) == ("serial", "serial")


def test_an_rms_norm_keeps_its_persistent_row_in_unrolled_loops():
    """The sample RMSNorm's persistent batches were read in `#pragma unroll 4` loops over
    runtime indices (128 bytes of local memory per thread at [2048, 8192] in a Llama decoder)."""
    fd = load_fusion("sample_fusions/rms_norm.py")
    (seg,) = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0)).segments
    assert "unrolled" in seg.stages.get("unroll", "")
    assert "#pragma unroll 4" not in seg.cuda_source[seg.cuda_source.rfind('extern "C"'):]
