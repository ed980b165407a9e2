"""Persistent launches are fitted to the register file (engine.schedule.persistent_fit).

The combined RMSNorm backward of the H200 report ([1, 2048, 8192] bf16) ran 512 x 2 threads,
64 registers each, for about 150 registers of per-thread arrays: 288 bytes of local memory per
thread. Once scheduled, a persistent segment's arrays are counted; a block shape whose
registers per thread do not hold them is replaced by the heuristic's next shape that does, and
when none does, the scheduler is refused for every group holding the same reductions.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine import load_fusion
from engine.compile import compile_fusion
from engine.config import Options
from engine.reference import evaluate
from engine.runtime import device
from engine.runtime.registers import register_cap, registers_needed
from engine.segment.refusals import Refusals
from scripts.ptxas_check import compile_at
from scripts.scales import Scale
from tests.emulation import needs_gxx
from tests.realworld.test_realworld import _close

SCRIPTS = Path(__file__).parents[1] / "realworld" / "scripts"
REPORT = SCRIPTS / "qwen2_rms_norm_residual_bwd_qkv_grad_cat.py"


def _at(path: Path, sizes: dict[int, int]):
    text = path.read_text()
    from engine import loads_fusion

    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    return compile_at(path, text, xs, fd.input_specs or [None] * len(xs), Scale("model", sizes), 1 << 31)


def test_register_cap_follows_the_block_size():
    h100 = device.model("H100")
    assert [register_cap(h100, t) for t in (1024, 512, 256, 128)] == [64, 128, 255, 255]
    assert [register_cap(h100, t) for t in (300, 458, 64)] == [168, 128, 255]  # four-warp granules
    assert registers_needed(400) == 140  # 100 registers of arrays, 40 for the rest


def test_the_reported_rms_norm_backward_runs_fewer_threads_that_hold_its_arrays():
    cf = _at(REPORT, {40: 2048, 128: 8192, 8: 512})
    seg = cf.segments[0]
    assert seg.scheduler == "inner_outer_persistent"
    p = seg.params
    # the heuristic's 512 x 2 threads would spill: one row of 512 threads holds the arrays
    assert (p.lparams.bdimx, p.lparams.bdimy) == (512, 1), str(p)
    assert any("registers of the 128 a block of 512 threads allows (the heuristic's 512x2 threads "
               "would spill)" in line for line in p.derivation)


def test_wider_than_the_combined_kernel_holds_an_inner_persistent_and_a_reduction_kernel():
    cf = _at(REPORT, {40: 2048, 128: 16384, 8: 1024})
    assert [s.scheduler for s in cf.segments] == ["inner_persistent", "reduction", "resize", "resize", "reduction"]
    notes = "\n".join(str(e) for e in cf.trace.events)
    assert "inner_outer_persistent is refused for every group holding its" in notes


def test_a_refusal_for_reductions_holds_for_every_group_holding_them():
    r = Refusals()
    assert r.refuse(frozenset({1, 2, 3}), "inner_outer_persistent", "too many arrays", 4, frozenset({2}))
    assert r.why_refused(frozenset({1, 2, 3}), "inner_outer_persistent") == "too many arrays"
    assert r.why_refused(frozenset({2, 7}), "inner_outer_persistent") == "too many arrays"
    assert r.why_refused(frozenset({1, 3}), "inner_outer_persistent") is None
    assert r.why_refused(frozenset({2}), "inner_persistent") is None


@pytest.fixture
def small_register_file(monkeypatch):
    """A device model with a register file small enough for the CI sizes to need fitting."""
    def make(registers: int) -> Options:
        tiny = dataclasses.replace(device.MODELS["H100"], name="tiny (test)", registers_per_sm=registers)
        monkeypatch.setitem(device.MODELS, "TINY", tiny)
        return Options(device_model="TINY")
    return make


@needs_gxx
@pytest.mark.parametrize("name, registers, scheduler", [
    ("layer_norm_bwd", 8192, "reduction"),  # no persistent shape fits: reductions and pointwise
    ("rms_norm_bwd", 5120, "inner_persistent"),  # the combined kernel refused: a row sum and a reduction
    ("rms_norm_bwd", 1024, "reduction"),
    ("softmax_bwd_bf16_roundtrip", 12288, "outer_persistent"),
    ("dropout_layer_norm_bwd_bool_mask", 8192, "inner_outer_persistent"),
])
def test_fitted_launches_match_the_reference_on_the_emulator(name, registers, scheduler, small_register_file):
    fd = load_fusion(SCRIPTS / f"{name}.py")
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs, small_register_file(registers))
    notes = [e.message for e in cf.trace.events
             if "registers of the" in e.message or "refused for every group" in e.message]
    assert notes, "the small register file made no launch change"
    assert scheduler in [s.scheduler for s in cf.segments]
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs)):
        _close(o, r)


def test_fallback_shapes_never_make_a_thread_hold_more_than_a_bounded_share_of_the_row():
    """A group norm backward's rows of 40960 floats: the heuristic's 1024 threads hold 40
    each; the fallbacks with fewer threads would hold 80 and 160, arrays ptxas spills
    (1168 bytes of local memory a thread at 512 threads on the H200). They are not offered."""
    from engine.ir.iterdomain import ParallelType
    from engine.schedule.params import LaunchParams
    from engine.schedule.persistent_fit import MAX_ROW_ELEMENTS, inner_shapes, row_elements
    from engine.schedule.reduction_params import ReductionParams

    p = ReductionParams(
        tag="Inner Persistent Heuristic", fastest_dim=True, persistent_kernel=True,
        cross_block_inner_reduction=True, unroll_factor_inner_reduction=4, vectorize_inner_reduction=True,
        batches_per_block_inner_reduction=10, block_dim_inner_reduction=ParallelType.block_x,
        grid_dim_iter_dom=ParallelType.grid_x,
        lparams=LaunchParams(gdimx=64, gdimy=1, bdimx=1024, bdimy=1))
    shapes = inner_shapes(p, 40960, 64, device.MODELS["H200"])
    assert shapes[0] == p
    assert all(row_elements(q) <= MAX_ROW_ELEMENTS for q in shapes)
    # a row short enough for fewer threads still has them offered
    short = dataclasses.replace(p, batches_per_block_inner_reduction=1,
                                lparams=dataclasses.replace(p.lparams, bdimx=1024))
    assert any(q.lparams.bdimx < 1024 for q in inner_shapes(short, 4096, 64, device.MODELS["H200"]))


def test_shared_memory_is_sized_for_every_buffer_it_keeps():
    """A softmax over GPT-2's vocabulary (a [64, 50257] bf16 input scaled by a temperature)
    keeps two float buffers of the row, the scaled logits and their exponentials; shared
    memory holds both at once (402 KB), more than an H200 block has. The heuristic sized it
    for one and the lowering refused the kernel; now the plan never asks for it."""
    from engine import loads_fusion

    text = (SCRIPTS / "softmax_fwd_temperature_scalar_gpt2_vocab.py").read_text()
    fd = loads_fusion(text, filename="softmax_fwd_temperature_scalar_gpt2_vocab.py")
    cf = compile_at(SCRIPTS / "softmax_fwd_temperature_scalar_gpt2_vocab.py", text,
                    fd.example_inputs(device="cpu", seed=0), fd.input_specs or [None, None],
                    Scale("real", {6: 64, 157: 50257}), 1 << 31)
    assert not [e for e in cf.trace.events if "bytes of dynamic shared memory" in e.message]
    for s in cf.segments:
        assert s.launch is None or s.launch.shared_mem_bytes <= 232448


def test_a_cross_entropy_row_that_fits_beside_the_exp_stays_in_registers():
    """llm.c's fused loss and gradient, [8192, 50304] bf16: 899 threads hold 56 bf16 of the row
    each (28 registers of the 64 the block allows) and the exp's 32 besides them, as nvFuser's
    inner persistent heuristic counts; ptxas takes 60 registers and spills nothing. Counted
    with the general 40, the row went to shared memory (1.32x slower on the H200)."""
    cf = _at(SCRIPTS / "cross_entropy_fused_loss_and_grad_llmc_vocab50304.py", {16: 8192, 144: 50304})
    (seg,) = cf.segments
    p = seg.params
    assert seg.scheduler == "inner_persistent" and p.smem_persistent_buffers == (), str(p)
    assert (p.lparams.bdimx, p.batches_per_block_inner_reduction, p.unroll_factor_inner_reduction) == (899, 7, 8)
    assert not any("would spill" in line for line in p.derivation)
