"""Loop-invariant element computations moved out of their loops (engine.lower.hoist): what
moves, what stays, and the norm backward kernel that divides once per row, not per element."""

from __future__ import annotations

import re

import torch

from engine import DataType, FusionDefinition, compile_fusion
from engine.codegen.statements import stmt_lines
from engine.lower import kexpr, kir
from engine.lower.hoist import hoist_invariants
from engine.lower.kexpr import Access, AddrOf, And, Call, Lit, Var


def _local(name: str) -> kir.Allocate:
    return kir.Allocate(name, "float", 1, "local")


def _assign(lhs: str, rhs: str, cond: str | None = None) -> kir.Stmt:
    st = kir.Assign(Access(lhs, 0), Lit(rhs))
    return kir.IfThenElse(And((Lit(cond),)), [st]) if cond else st


def _text(body: list[kir.Stmt]) -> str:
    return "\n".join(line for s in body for line in stmt_lines(s, 0))


def _loop(body: list[kir.Stmt], var: str = "i1") -> kir.ForLoop:
    return kir.ForLoop(var, 8, "unroll", "iS1{8}", body)


def test_an_invariant_chain_leaves_the_loop_with_its_declarations_and_guard() -> None:
    loop = _loop([_local("T5"), _local("T6"), _local("T7"),
                  _assign("T5", "T4[0] / 6144.0f", cond="row < 64"),
                  _assign("T6", "T5[0] * 2.0f", cond="row < 64"),
                  _assign("T7", "T6[0] + T3[i1]"),
                  kir.Assign(Access("T8", Var("i1")), Lit("T7[0]"))])
    body, moved = hoist_invariants([loop], {"T3", "T8"})
    assert moved == 2
    text = _text(body)
    # T5 and T6 are computed once, before the loop; T7 reads T3[i1] and stays.
    assert text.index("T5[0] = T4[0] / 6144.0f") < text.index("for (nvfuser_index_t i1")
    assert text.index("T6[0] = T5[0] * 2.0f") < text.index("for (nvfuser_index_t i1")
    assert text.index("for (nvfuser_index_t i1") < text.index("T7[0] = T6[0] + T3[i1]")
    assert text.count("if (row < 64)") == 2 and text.count("float T5[1]") == 1


def test_nothing_leaves_a_loop_that_waits_for_the_block() -> None:
    loop = _loop([_local("T5"), _assign("T5", "T4[0] * 2.0f"), kir.BlockSync("RAW: S1"),
                  kir.Assign(Access("T8", Var("i1")), Lit("T5[0]"))])
    body, moved = hoist_invariants([loop], {"T8"})
    assert moved == 0 and len(body) == 1


def test_reads_of_what_the_loop_writes_stay() -> None:
    # T9 is accumulated in the loop; a copy of it is not invariant. T5 is assigned twice.
    loop = _loop([_local("T5"), _local("T6"),
                  kir.Assign(Access("T9", 0), Lit("T9[0] + T3[i1]")),
                  _assign("T6", "T9[0]"), _assign("T5", "1.0f"), _assign("T5", "2.0f")])
    _, moved = hoist_invariants([loop], {"T3"})
    assert moved == 0


def test_memory_reads_stay_and_what_they_feed_with_them() -> None:
    """A row's scalar read from shared or global memory is read again in the loop (it holds no
    register between its uses there); arithmetic on a register moves."""
    store = kir.Exec(Call("loadGeneric", ("float", "4"), (AddrOf(Access("T8", Var("i1"))), Var("T7_vec"))))
    loop = _loop([_local("T5"), _local("T6"), _local("T9"),
                  _assign("T5", "T2[row]"), _assign("T6", "T5[0] * 3.0f"), _assign("T9", "T4[0] * 3.0f"), store])
    body, moved = hoist_invariants([loop], {"T2", "T8"})
    text = _text(body)
    assert moved == 1
    assert text.index("T9[0] = T4[0] * 3.0f") < text.index("for (") < text.index("T5[0] = T2[row]")


def test_effects_and_random_numbers_stay() -> None:
    """Random numbers (as C text, or as the lowering's typed fsRng call) and block-wide calls
    stay; a pure call beside them moves."""
    rng = Call("fsRng", ("float",), (Var("fs_rng"), kexpr.FALSE, Var("seed"), Lit("offset")))
    loop = _loop([_local("T5"), _local("T6"), _local("T7"), _local("T9"),
                  _assign("T5", "philox_uniform(seed, offset)"),
                  kir.Assign(Access("T6", 0), rng),
                  _assign("T7", "warpReduce(T4[0])"),
                  _assign("T9", "expf(T4[0])"),
                  kir.Assign(Access("T8", Var("i1")), Lit("T5[0] + T6[0] + T7[0] + T9[0]"))])
    body, moved = hoist_invariants([loop], {"T8"})
    assert moved == 1 and _text(body).index("T9[0] = expf(T4[0])") < _text(body).index("for (")


def _norm_backward_inputs(fd: FusionDefinition, dtype: DataType) -> tuple:
    """grad_out and x of `dtype`, read as floats; the rows' mean and rstd; x normalized."""
    dy = fd.define_tensor([-1, -1], dtype=dtype)
    x = fd.define_tensor([-1, -1], dtype=dtype)
    mean = fd.define_tensor([-1, 1], dtype=DataType.Float)
    rstd = fd.define_tensor([-1, 1], dtype=DataType.Float)
    if dtype != DataType.Float:
        dy, x = fd.ops.cast(dy, DataType.Float), fd.ops.cast(x, DataType.Float)
    return dy, rstd, fd.ops.mul(fd.ops.sub(x, mean), rstd)


def test_layer_norm_backward_divides_once_per_row() -> None:
    """The row-invariant term of grad_input (a row sum over the width) is divided once per row,
    outside the loop over the row's elements that divides the per-element term."""
    fd = FusionDefinition()
    with fd:
        dy, _, xhat = _norm_backward_inputs(fd, DataType.Float)
        n = fd.define_scalar(96.0)
        a = fd.ops.div(fd.ops.sum(dy, dims=[1], keepdim=True), n)
        b = fd.ops.div(fd.ops.mul(dy, xhat), n)
        fd.add_output(fd.ops.add(b, a))
        fd.add_output(fd.ops.sum(fd.ops.mul(dy, xhat), dims=[0]))
    xs = [torch.randn(64, 96), torch.randn(64, 96), torch.randn(64, 1), torch.rand(64, 1) + 0.5]
    cf = compile_fusion(fd, xs)
    seg = next(s for s in cf.segments if s.scheduler == "inner_outer_persistent")
    assert "loop-invariant statement(s) moved" in seg.stages["hoist"]
    lines = seg.cuda_source.split("__global__", 1)[1].splitlines()
    depth = sorted(len(ln) - len(ln.lstrip()) for ln in lines if re.search(r"\w+\[0\] = \(\w+\[0\] / 96", ln))
    assert len(depth) == 2 and depth[0] < depth[1], depth
    out = cf.run(xs, backend="emulate")
    ref = cf.run(xs, backend="reference")
    for o, r in zip(out, ref):
        torch.testing.assert_close(o, r, rtol=1e-4, atol=1e-4)


def test_rows_in_shared_memory_are_read_back_a_vector_at_a_time() -> None:
    """The second pass over a row staged in shared memory (grad_input's elements, stored a
    vector at a time) reads the row a vector at a time too, not an element at a time."""
    fd = FusionDefinition()
    with fd:
        dyf, rstd, xhat = _norm_backward_inputs(fd, DataType.BFloat16)
        g = fd.ops.sub(fd.ops.mul(dyf, rstd), fd.ops.mul(xhat, fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[1], keepdim=True)))
        fd.add_output(fd.ops.cast(g, DataType.BFloat16))
        fd.add_output(fd.ops.sum(fd.ops.mul(dyf, xhat), dims=[0]))
    xs = [torch.randn(64, 512).bfloat16(), torch.randn(64, 512).bfloat16(), torch.randn(64, 1),
          torch.rand(64, 1) + 0.5]
    cf = compile_fusion(fd, xs)
    seg = next(s for s in cf.segments if s.scheduler == "inner_outer_persistent")
    body = seg.cuda_source.split("__global__", 1)[1]
    rows = set(re.findall(r"__bfloat\* (T\d+) = reinterpret_cast<__bfloat\*>\(smem", body))
    assert rows, "the bf16 rows are staged in shared memory"
    converted = set(re.findall(r"__bfloat2float\((\w+)\[", body))
    assert converted and not converted & rows, (converted, rows)
    out = cf.run(xs, backend="emulate")
    ref = cf.run(xs, backend="reference")
    for o, r in zip(out, ref):
        torch.testing.assert_close(o.float(), r.float(), rtol=2e-2, atol=2e-2)
