"""The per-share epilogue of cooperative grid reductions (engine/lower/grid_epilogue.py): which
epilogues may run per share, the kernel text it makes, and kernels that compute the same
results as the reference with it (on the emulator; tests/engine/test_pipeline_gpu.py runs them
on the GPU)."""

from __future__ import annotations

import pytest

from engine import load_fusion
from engine.codegen.statements import stmt_lines
from engine.compile import compile_fusion
from engine.lower import kir
from engine.lower.grid_epilogue import GridSync, share_epilogue
from engine.lower.kexpr import FALSE, Access, Call, Cmp, Lit, Var
from tests.fuzz.harness import run_compiled
from tests.realworld.test_realworld import SCRIPTS

SYNC = GridSync("T9_last", "T9_acc", (False, True, False), (False, True, False),
                ("false", "true", "false", "false", "true", "false"),
                (Var("T9_acc"), Var("op"), Lit("0.0f"), Var("T9_work.data"), 64, Var("T9_sync.data"), Var("smem")),
                Var("T9_work.data"))
PARAMS = {"T0", "T6", "T9_work", "T9_sync"}


def kernel(*epilogue: kir.Stmt, before: tuple[kir.Stmt, ...] = ()) -> list[kir.Stmt]:
    return [kir.Allocate("T9", "float", 4, "local"), kir.Allocate("T9_acc", "float", 4, "local", init="0"),
            kir.Allocate("T3", "float", 1, "local"), kir.Local("bool", "T9_last", FALSE), *before,
            kir.Assign(Var("T9_last"), Call("gridReduceGroupSync", SYNC.targs, SYNC.args)), *epilogue]


def store(rhs: str = "T9_acc", index: str = "threadIdx.x") -> kir.Stmt:
    """`T6[index] = rhs[0]` under the flag, as lowering guards a grid reduction's consumers."""
    guarded, = kir.guard([Var("T9_last")], [kir.Assign(Access("T6", Var(index)), Access(rhs, 0))])
    return guarded


def test_a_one_thread_epilogue_runs_per_share():
    body, notes = share_epilogue(kernel(store()), {"T9_last": SYNC}, PARAMS)
    text = "\n".join(line for s in body for line in stmt_lines(s, 0))
    assert notes == ["T9_last: every block runs the epilogue of the thread segments it combined"]
    assert "const FsShare fs_share0 = gridReduceGroupShares<false, true, false, false, true, false>(T9_acc, op" in text
    assert "gridReduceGroupSync" not in text
    loop = text[text.index("for (unsigned fs_v"):]
    assert "fsShareLoad(T9_acc, T9_work.data, fs_share0, fs_v);\n  T9_last = true;" in loop
    assert "T6[fs_vt.x] = T9_acc[0];" in loop and "threadIdx" not in loop.split("\n", 1)[1]


@pytest.mark.parametrize("epilogue, before, why", [
    ((kir.IfThenElse(Var("T9_last"), [kir.BlockSync("RAW")]), store()), (), "it needs the whole block (__syncthreads)"),
    ((kir.BlockSync("RAW"), store()), (), "it does work outside its grid reduction's flag"),
    ((store(index="threadIdx.y"),), (), "it reads threadIdx.y, a reduced dimension"),
    ((store(index="blockIdx.y"),), (), "it reads blockIdx.y, a reduced dimension"),
    ((store(rhs="T3"),), (kir.Assign(Access("T3", 0), Access("T0", Var("threadIdx.x"))),),
     "it reads T3, computed per thread before the grid reduction"),
    ((kir.Assign(Access("T6", Var("threadIdx.x")), Access("T9_acc", 0)),), (), "it does work outside its grid reduction's flag"),
    # A condition that names the flag but is not one of its conjuncts does not guard by it.
    ((kir.IfThenElse(Cmp(Var("T9_last"), "==", FALSE), [kir.Assign(Access("T6", Var("threadIdx.x")), Access("T9_acc", 0))]),), (),
     "it does work outside its grid reduction's flag"),
    ((kir.Scope([kir.Assign(Access("T6", Var("threadIdx.x")), Access("T9_acc", 0)), store()]),), (),
     "it does work outside its grid reduction's flag"),
    ((), (), "there is none"),
])
def test_epilogues_that_are_not_one_threads_code_stay_in_the_last_block(epilogue, before, why):
    body = kernel(*epilogue, before=before)
    out, notes = share_epilogue(body, {"T9_last": SYNC}, PARAMS)
    assert out is body and notes == [f"T9_last: the epilogue stays in the last block: {why}"]


def test_a_grid_reduction_inside_a_loop_keeps_the_gather():
    call = kir.Assign(Var("T9_last"), Call("gridReduceGroupSync", SYNC.targs, SYNC.args))
    body = [kir.ForLoop("i0", 4, "serial", "iS0", [call, store()])]
    out, notes = share_epilogue(body, {"T9_last": SYNC}, PARAMS)
    assert out is body and notes == ["T9_last: the epilogue stays in the last block: a grid reduction inside a loop"]


def test_layer_norm_backward_runs_both_weight_gradients_per_share():
    """Two grid reductions (the weight and bias gradients): both calls, then one loop over the
    share running both epilogues, and the outputs still match the reference."""
    fd = load_fusion(SCRIPTS / "layer_norm_bwd.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    seg = compile_fusion(fd, xs).segments[0]
    assert seg.launch.cooperative
    body = seg.cuda_source[seg.cuda_source.index('extern "C" __global__'):]
    assert body.count("gridReduceGroupShares<") == 2 and body.count("for (unsigned fs_v") == 1
    assert seg.stages["grid_epilogue"].count("every block runs the epilogue") == 2
    outcome = run_compiled(fd, xs, backend="emulate")
    assert outcome.kind == "pass", outcome.detail
