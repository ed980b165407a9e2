"""Loop-only broadcasts (TensorView.broadcast_loop) end to end, on the two real-world scripts
the size sweep (scripts/size_sweep.py) found split at larger sizes: a [C] tensor computed
from a [C] input (batch norm's rsqrt(var + eps)) or from a reduction (welford's
rsqrt(var_sum / n + eps)) read through a broadcast whose loop starts with broadcast axes it
lacks. Without loop-only broadcasts it stayed at ca_pos 0, computed by other threads than
those reading it, and the pointwise kernel was refused at lowering. Checked here: segment
count, values against engine.reference on the g++ emulator, and the printed loop domain."""

import re
from pathlib import Path

import pytest
import torch

from engine import compile_fusion, loads_fusion
from engine.ir.printer import transforms_block
from engine.reference import evaluate
from tests.emulation import require_gxx
from tests.engine.test_schedule_primitives import pointwise_chain
from tests.fuzz.harness import mismatch_reason

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"
SPLIT_REASONS = ("failed to lower", "is refused for")  # a kernel refused at lowering


def _scaled(name: str, subs: dict[str, str]):
    text = (SCRIPTS / f"{name}.py").read_text()
    for old, new in subs.items():
        assert old in text, old
        text = text.replace(old, new)
    fd = loads_fusion(text, filename=f"{name}-scaled")
    return fd, fd.example_inputs(seed=0)


def _compile_and_emulate(fd, xs):
    """The compiled fusion; every emulated output matches the reference evaluator within the
    fuzz harness's tolerances."""
    require_gxx()
    cf = compile_fusion(fd, xs)
    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    assert len(outs) == len(refs)
    for k, (out, ref) in enumerate(zip(outs, refs)):
        why = mismatch_reason(out, ref)
        assert why is None, f"output {k}: {why}"
    return cf


def _refusals(cf) -> list[str]:
    return [str(e) for e in cf.trace.events if any(r in e.message for r in SPLIT_REASONS)]


def _numbered(text: str) -> str:
    """`text` with the ids' numbers as # (they follow the fusion's creation order)."""
    return re.sub(r"(?<=[A-Za-z.])\d+(?=\{)", "#", text)


def _loop_only_blocks(cf) -> dict[str, str]:
    return {tv.short_name: transforms_block(tv) for s in cf.segments for tv in s.fusion.tensors()
            if tv.domain.loop_only}


# ---- batch_norm_inference_channels_last: [N, C, H, W] * [C], C = 32 and 128 ------------------

def _batch_norm(n: int, c: int):
    return _scaled("batch_norm_inference_channels_last",
                   {"(4, 8, 6, 6)": f"({n}, {c}, 6, 6)", "(8,)": f"({c},)"})


@pytest.mark.parametrize("n, c", [(16, 32), (4, 128), (64, 128)])
def test_batch_norm_inference_channels_last_is_one_kernel_at_larger_c(n, c):
    """The sweep's 4x4, 8x16 and 4x16 scales: 2 pointwise kernels before (the first refused
    at lowering: 'T11 reads T8 (local memory) at elements another block computed')."""
    fd, xs = _batch_norm(n, c)
    cf = _compile_and_emulate(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    assert _refusals(cf) == []
    # rsqrt(running_var + eps) and running_var + eps run in the output's loops: a loop-only
    # broadcast where the output's loop has its broadcast blockIdx.y, inside ca_pos.
    blocks = _loop_only_blocks(cf)
    assert sorted(blocks) == ["T7", "T8"]
    for block in blocks.values():
        # (the grid axes swap with the sizes: blockIdx.y runs N at C = 32, blockIdx.x at C = 128)
        assert re.search(r" loop domain : \(bblockIdx\.([xy])\d+\{1\}, iblockIdx\.(?!\1)[xy]", block), block
        assert "ca_pos( 4 )" in block.splitlines()[0], block
    # The generated kernel computes the [C] tensors inside the output's loop, per element.
    src = cf.segments[0].cuda_source
    body = src[src.index("__global__"):]
    assert body.index("T8[0] = fsRsqrt(T7[0]);") < body.index("T11[0] = T8[0];")
    if (n, c) != (16, 32):
        return
    assert _numbered(blocks["T8"]) == (
        "T8_l_float[bblockIdx.y#{1}, iblockIdx.x#{( ceilDiv(( ceilDiv(i8, 8) ), 128) )}, ithreadIdx.x#{128}, "
        "iS#{8}] ca_pos( 4 ) produce_pos( 4 )\n"
        " logical domain : (iS#{i8})\n"
        " contiguity: t\n"
        "  Split: iS#{i8} by factor 8 -> iS#{( ceilDiv(i8, 8) )}, iS#{8}\n"
        "  Split: iS#{( ceilDiv(i8, 8) )} by factor 128 -> iblockIdx.x#{( ceilDiv(( ceilDiv(i8, 8) ), 128) )}, "
        "ithreadIdx.x#{128}\n"
        " loop domain : (bblockIdx.y#{1}, iblockIdx.x#{( ceilDiv(( ceilDiv(i8, 8) ), 128) )}, ithreadIdx.x#{128}, "
        "iS#{8})\n"
    )


def test_batch_norm_inference_channels_last_small_size_is_unchanged():
    fd, xs = _batch_norm(4, 8)
    cf = _compile_and_emulate(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["pointwise"]
    assert _refusals(cf) == []


# ---- welford_mean_var: welford over [0, 2] of [S, C, W], normalized by the [C] stats ---------

def _welford(s: int, c: int, w: int):
    return _scaled("welford_mean_var", {"[6, 8, 20]": f"[{s}, {c}, {w}]", "(6, 8, 20)": f"({s}, {c}, {w})"})


def test_welford_mean_var_at_its_own_size_is_one_persistent_kernel():
    fd, xs = _welford(6, 8, 20)
    cf = _compile_and_emulate(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["inner_persistent"]
    assert _refusals(cf) == []


@pytest.mark.parametrize("s", [2048, 2047])
def test_welford_mean_var_at_large_s_is_reduction_then_one_pointwise_kernel(s):
    """[S=2048, 8, 20]: 40960 elements reduced per channel, 8 channels: inner_persistent
    refuses ('not enough blocks', nvFuser's check), so nvFuser runs a reduction and a
    pointwise kernel too. Before loop-only broadcasts the pointwise segment was refused at
    lowering ('T9 reads T6 (local memory) at elements another thread computed') and the
    fusion segmented again; now the first pointwise segment is kept."""
    fd, xs = _welford(s, 8, 20)
    cf = _compile_and_emulate(fd, xs)
    assert [s.scheduler for s in cf.segments] == ["reduction", "pointwise"]
    assert _refusals(cf) == []
    first = next(e for e in cf.trace.events if e.message.startswith("no scheduler accepts the complete"))
    verdicts = {v["scheduler"]: v["reason"] for v in first.data["verdicts"]}
    assert verdicts["inner_persistent"] == "not enough blocks"
    # var_sum / n + eps and its rsqrt run in the pointwise output's loops.
    blocks = _loop_only_blocks(cf)
    assert sorted(blocks) == ["T5", "T6"]
    for block in blocks.values():
        assert re.search(r" loop domain : \(bblockIdx\.y\d+\{1\}, bthreadIdx\.y\d+\{3\}, iblockIdx\.x\d+", block), block
        assert "ca_pos( 5 )" in block.splitlines()[0], block


# ---- hand-placed loop-only broadcasts (TensorView.broadcast_loop) outside ca_pos -------------

def _exp_sum():
    fd, _, t1, t2 = pointwise_chain()
    return fd, t1, t2


@pytest.mark.parametrize("axis, parallel", [(0, None), (1, "block_y")])
def test_a_producer_with_a_loop_only_broadcast_outside_its_ca_pos_runs_it_and_matches(axis, parallel):
    """Not inlined, the broadcast is a loop of its own (serial, or threadIdx.y): every
    iteration computes the same elements; the kernel is kept and its values are right."""
    from engine import ParallelType

    fd, t1, t2 = _exp_sum()
    t1.broadcast_loop(axis, 4)
    if parallel is not None:
        t1.axis(axis).parallelize(getattr(ParallelType, parallel))
    b = t1.axis(axis)
    assert _numbered(transforms_block(t1)).endswith(
        " loop domain : (" + ", ".join(["iS#{i0}", "iS#{i2}"][:axis] + [_numbered(str(b))]
                                       + ["iS#{i0}", "iS#{i2}"][axis:]) + ")\n")
    cf = _compile_and_emulate(fd, [torch.randn(3, 5)])
    assert [s.scheduler for s in cf.segments] == ["user"]


def test_a_reduction_inside_a_loop_only_broadcast_of_four_is_refused_not_miscomputed():
    """A reduction run in a serial broadcast loop of 4 would add each element 4 times:
    lowering refuses it with that reason (inline_most only inserts broadcasts inside
    ca_pos, where they run the consumer's loops)."""
    from engine.errors import EngineError

    fd, t1, t2 = _exp_sum()
    t2.broadcast_loop(0, 4)
    require_gxx()
    with pytest.raises(EngineError, match="would accumulate every element that many times"):
        compile_fusion(fd, [torch.randn(3, 5)])


def test_a_weight_read_by_a_rows_output_loop_is_loaded_a_slice_at_a_time() -> None:
    """LayerNorm forward (Thunder's trace, hidden 4096, 4096 rows: one row a block of 128
    threads, 32 elements a thread): the cached weight and bias [H] are read through a
    broadcast whose loop starts with the row axis on blockIdx.x. That broadcast is no loop,
    so each cache is computed in the output loop a vector slice at a time (8 elements a
    thread), not a thread's whole share of the row (32) before it, as nvFuser does. The
    kernel at that size is read; the values are checked on the emulator at 40 rows."""
    subs = {"[2, 20, 64]": "[2, 2048, 4096]", "[2, 20, 1]": "[2, 2048, 1]", "[64]": "[4096]",
            "(2, 20, 64)": "(2, 2048, 4096)", "(64,)": "(4096,)"}
    fd, xs = _scaled("layer_norm_fwd_thunder_bf16_hidden4096", subs)
    (seg,) = compile_fusion(fd, xs).segments
    assert seg.launch.block == (128, 1, 1) and seg.launch.grid == (4096, 1, 1)
    src = seg.cuda_source
    weights = [t.short_name for t in seg.fusion.tensors()
               if t.definition is not None and t.definition.inputs[0] in seg.fusion.inputs[1:]
               and type(t.definition).__name__ == "LoadStoreOp"]
    assert len(weights) == 2, weights
    for name in weights:
        assert f"__bfloat {name}[8];" in src, name  # a slice, declared in the output loop
        assert f"__bfloat {name}[32];" not in src, name
    small = {k: v.replace("2048", "20") for k, v in subs.items()}
    _compile_and_emulate(*_scaled("layer_norm_fwd_thunder_bf16_hidden4096", small))
