"""What the normalization backward kernels keep and load: persistent buffers projected per use
(engine.schedule.persistent_projection), the cheapest tensors kept across a reduction
(engine.schedule.reduction_phases), shared-memory caches pipelined together
(engine.lower.circular_buffer), loops of identical iterations run once (engine.lower.loops) and
block-wide fills of shared memory in 16-byte vectors (engine.lower.bulk_copy.widen_bulk_copy).
Real sizes are compiled for the H200 model on the CPU; values are checked on the emulator at the
scripts' own small sizes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from engine import compile_fusion, load_fusion, loads_fusion
from engine.codegen.statements import stmt_lines
from engine.config import Options
from engine.lower import kir
from engine.reference import evaluate
from scripts.ptxas_check import compile_at
from scripts.scales import Scale, real_scale
from tests.emulation import needs_gxx

SCRIPTS = Path(__file__).resolve().parents[1] / "realworld" / "scripts"
THUNDER = SCRIPTS / "rms_norm_bwd_thunder_recompute_rstd_bf16_hidden8192.py"


def _real(path: Path, sizes: dict[int, int] | None = None):
    """The fusion compiled for the H200 model at `sizes` (small size -> real size), else at
    the sizes its `# real-sizes:` header gives."""
    text = path.read_text()
    fd = loads_fusion(text, filename=str(path))
    xs = fd.example_inputs(device="cpu", seed=0)
    scale = Scale("real", sizes) if sizes is not None else real_scale(text)
    assert scale is not None
    return compile_at(path, text, xs, fd.input_specs or [None] * len(xs), scale, 1 << 31)


def _emulated(path: Path, device: str = "H200") -> list[str]:
    fd = load_fusion(path)
    xs = fd.example_inputs(device="cpu", seed=0)
    cf = compile_fusion(fd, xs, Options(device_model=device))
    for o, r in zip(cf.run(xs, backend="emulate"), evaluate(fd.fusion, xs), strict=True):
        tol = 1e-4 if o.dtype == torch.float32 else 2e-2
        torch.testing.assert_close(o.double(), r.double(), rtol=tol, atol=tol * max(1.0, r.abs().max().item()))
    return [s.scheduler for s in cf.segments]


def test_an_operand_that_meets_the_result_later_reads_a_copy_of_its_own() -> None:
    # Thunder's RMSNorm backward: w * grad_out (a float made from two bf16 inputs) is summed
    # with x per row, and also multiplied by 1/rms, a term added to the second reduction's
    # result. That use is not downstream of the second reduction, yet the buffer would stay
    # alive across it: it reads a copy recomputed from the inputs, as nvFuser projects it.
    fd = load_fusion(THUNDER)
    cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(device_model="H200"))
    events = [e.message for e in cf.trace.events if "projected to inputs" in e.message]
    assert any("recomputed from T0, T1" in m for m in events), events
    assert any("recomputed from T2" in m for m in events), events


@needs_gxx
@pytest.mark.parametrize("name", [
    "rms_norm_bwd_thunder_recompute_rstd_bf16_hidden8192",
    "rms_norm_bwd_stride_order_size1_middle",
    "llama2_rms_norm_bwd_scalar_inputs",
    "dropout_layer_norm_bwd_bool_mask",
    "gemma_rms_norm_bwd_reshape_permute_out",
])
def test_norm_backwards_are_one_combined_kernel_matching_the_reference(name: str) -> None:
    # stride_order_size1_middle: the copy of x made from its [N, H] input by a broadcast to
    # [1, N, H] takes its loop from its consumer (the leading broadcast axis where the
    # reference has it) and the per-row rstd kept apart stays on the side before the
    # reduction that reads it; each once made the combined kernel fail to lower.
    assert "inner_outer_persistent" in _emulated(SCRIPTS / f"{name}.py")


def test_the_combined_kernel_keeps_the_rows_intermediates_out_of_registers() -> None:
    # At its real size, [2048, 8192] bf16: 206 registers a thread and 256 threads before the
    # operands were projected per use and the cheapest tensors kept across the reductions;
    # now 512 threads within the 128 registers each may have.
    from engine.runtime.nvcc import nvcc_available
    from engine.runtime.ptxas import ptxas_usage

    if not nvcc_available():
        pytest.skip("nvcc is not available")
    cf = _real(THUNDER)
    (seg,) = [s for s in cf.segments if s.is_kernel]
    assert seg.scheduler == "inner_outer_persistent"
    (u,) = ptxas_usage(seg.cuda_source, "sm_90")
    assert u.spill_stores == 0 and u.local_bytes == 0
    assert seg.launch.threads * u.registers <= 65536, (seg.launch, u.registers)
    assert u.registers <= 160, (seg.launch, u.registers)


def test_two_shared_memory_caches_of_one_loop_are_pipelined_together() -> None:
    cf = _real(THUNDER)
    (seg,) = [s for s in cf.segments if s.is_kernel]
    notes = seg.stages.get("circular_buffer", "")
    assert len(re.findall(r"circular buffer of 2 stages", notes)) == 2, notes
    # one wait and one barrier a stage, the loads of both caches in its cp.async group
    kernel = seg.cuda_source[seg.cuda_source.index('extern "C" __global__'):]
    assert kernel.count("fsCpAsyncWait<") == 1


def _loops(stmts: list[kir.Stmt]):
    for st in stmts:
        if isinstance(st, kir.ForLoop):
            yield st
        for child in ([st.body] if isinstance(st, kir.ForLoop | kir.Scope)
                      else [st.then, st.orelse] if isinstance(st, kir.IfThenElse) else []):
            yield from _loops(child)


@pytest.mark.parametrize("name, sizes", [
    ("llama2_rms_norm_bwd_scalar_inputs", {16: 2048, 32: 8192}),
    ("rms_norm_bwd_zero_dim_tensor_scale", {}),
    ("layer_norm_bwd", {64: 2048, 96: 20480}),
])
def test_no_loop_repeats_the_same_iteration(name: str, sizes: dict[int, int]) -> None:
    # A per-row value kept in a nest of its own has loop-only broadcast axes of its consumer's
    # extents; its loop ran 32 times over the same element (llama2: 101 -> 70 us on the
    # H200 once it ran once). A loop whose variable its body never reads is such a loop.
    path = SCRIPTS / f"{name}.py"
    if sizes:
        cf = _real(path, sizes)
    else:
        fd = load_fusion(path)
        cf = compile_fusion(fd, fd.example_inputs(device="cpu", seed=0), Options(device_model="H200"))
    for seg in cf.segments:
        if not seg.is_kernel:
            continue
        for loop in _loops(seg.lowered.kernel.body):
            text = "\n".join(line for st in loop.body for line in stmt_lines(st, 0))
            assert re.search(rf"\b{loop.var}\b", text), f"segment {seg.id}: loop {loop.var} repeats its body"


def test_a_shared_memory_fill_that_does_not_divide_among_the_threads_is_still_vectorized() -> None:
    # fp32 rows of 5040 elements filled by 252 x 2 threads: 1260 vectors of 4 floats over 504
    # threads, two whole trips and a guarded third, not 4-byte copies.
    cf = _real(SCRIPTS / "rms_norm_bwd_3d_fp32_sum_batch_seq.py")
    src = "\n".join(s.cuda_source for s in cf.segments if s.is_kernel and "inner_outer" in s.scheduler)
    assert "fsCpAsync<float, 4>" in src and "fsCpAsync<float, 1>" not in src
