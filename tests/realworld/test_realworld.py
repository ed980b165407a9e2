"""Real-world repro scripts (tests/realworld/scripts): nvFuser python-frontend files in the
spellings of 2022-2026 (old and new argument names, Thunder traces, nvfuser_direct), each
loaded without executing it, compiled (segment, schedule, lower, render), emulated on the
CPU and compared with the reference evaluator (where an output differs beyond its dtype's
tolerance, with the fusion computed in float64 as a second opinion: tests.rounding). Scripts
using what the engine genuinely
lacks are refused, and the test pins the message (op and line). Each script's header
names the issue or file it is modelled on."""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine import load_fusion
from engine.compile import compile_fusion
from engine.errors import CompileError, FusionFileError
from engine.reference import evaluate
from tests.emulation import needs_gxx
from tests.rounding import Spread, beyond_compute_range, explained_by_rounding, rounding_spread

SCRIPTS = Path(__file__).resolve().parent / "scripts"


# Scripts whose checking code after the run is skipped unread: the lines of the first and
# the last statement skipped, and how many statements were.
CHECKING_CODE = {
    "layer_norm_fwd_eager_reference_trailer": (49, 56, 8),
    "rms_norm_fwd_timing_loop_perf_counter": (45, 63, 16),
    "softmax_bwd_numpy_allclose_trailer": (30, 37, 7),
    "bias_gelu_validate_profiler_trailer": (44, 59, 6),
    "subclass_two_outputs_check_helper_trailer": (33, 46, 9),
    "execute_options_validate_trailer": (35, 41, 7),
}

# Genuinely unsupported features: refused while loading, with the op and the line.
REFUSED = {
    "sched_merge_reduction_iter_illegal": "sched_merge_reduction_iter_illegal.py:17: self.sched.merge: T1: cannot "
                                          "merge iS4{8} and rS5{8}: iteration and reduction axes do not merge",
    "slice_step2": "slice_step2.py:9: fd.ops.slice: slice: T0 axis 1: only stride 1 is supported, got 2",
    "complex_constant": "complex_constant.py:11: fd.define_scalar: define_scalar: complex constants are "
                        "not supported",
    "uint64_hash_ids_refused": "uint64_hash_ids_refused.py:10: DataType.UInt64: nvFuser's unsigned 64-bit type is "
                               "not supported by this engine",
    "alphafold3_triangle_attention_bias_mask": "alphafold3_triangle_attention_bias_mask.py:38: fd.ops.sdpfa_fwd: "
                                               "sdpfa_fwd: bias T16 has more than 4 axes (a bias or mask over 5-D "
                                               "attention is not supported)",
    "torch_c_nvfuser_rank_only_2022": "torch_c_nvfuser_rank_only_2022.py:12: fd.define_tensor: define_tensor(3): "
                                      "the rank-only form of the 2022 frontend (with fd.add_input) is not "
                                      "supported; give the sizes: shape=[-1, -1, -1]",
}

# Loaded fine; the code generator has no complex arithmetic: refused at compile time.
COMPILE_REFUSED = {
    "complex_mul": "mul: complex types (std::complex<float>) are not supported by the CUDA code generator",
}

# Engine bugs these scripts found (scheduling/lowering, outside the frontend): strict xfail,
# so a fix shows up as XPASS and the script moves to WORKS.
KNOWN_BUGS: dict[str, str] = {
}

# Every other script loads, compiles and matches the reference on the emulator: a new script
# joins the corpus by being added to the folder, and must work unless listed above.
WORKS = sorted(p.stem for p in SCRIPTS.glob("*.py")
               if p.stem not in {*REFUSED, *COMPILE_REFUSED, *KNOWN_BUGS})


def test_the_corpus_is_whole():
    listed = {*REFUSED, *COMPILE_REFUSED, *KNOWN_BUGS}
    assert listed <= {p.stem for p in SCRIPTS.glob("*.py")}, "a listed script is missing"
    assert len(WORKS) >= 150


def _close(out: torch.Tensor, ref: torch.Tensor, spread: Callable[[], Spread | None] | None = None) -> None:
    """`out` matches `ref`: bit for bit for fp8 and non-floats, else within the dtype's
    tolerance; elements beyond it pass where `spread()` (the fusion in float64, for this
    output) shows them explained by rounding (tests.rounding.explained_by_rounding) or
    beyond float's range in both (tests.rounding.beyond_compute_range)."""
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if out.element_size() == 1 and out.dtype.is_floating_point:  # fp8: bit-exact
        assert torch.equal(out.view(torch.uint8), ref.view(torch.uint8))
    elif not out.dtype.is_floating_point:
        assert torch.equal(out, ref)
    else:
        tol = 1e-5 if out.dtype in (torch.float32, torch.float64) else 1e-2
        scale = ref.abs().max().item() if ref.numel() else 1.0  # an empty output has no max
        o, r = out.double(), ref.double()
        same = torch.isclose(o, r, rtol=tol, atol=tol * max(1.0, scale), equal_nan=True)
        if bool(same.all()):
            return
        judged = spread() if spread is not None else None
        if judged is not None:
            same |= explained_by_rounding(out, ref, judged) | beyond_compute_range(out, ref, judged)
        bad = ~same
        k = int(bad.flatten().nonzero()[0]) if bad.any() else 0
        assert not bad.any(), (
            f"{int(bad.sum())} of {out.numel()} elements differ beyond rtol=atol/max={tol}"
            + ("" if judged is None else " and further from the float64 result than rounding explains")
            + f", e.g. flat {k}: {o.flatten()[k].item()} != reference {r.flatten()[k].item()}"
            + ("" if judged is None else f" (float64 {judged.wide.flatten()[k].item()})"))


def _emulate_and_compare(name: str) -> None:
    fd = load_fusion(SCRIPTS / f"{name}.py")
    xs = fd.example_inputs(seed=0)
    outs = compile_fusion(fd, xs).run(xs, backend="emulate")
    refs = evaluate(fd.fusion, fd.example_inputs(seed=0))
    assert len(outs) == len(refs) == len(fd.fusion.outputs)
    spreads: list[Spread] | None = None

    def spread(k: int) -> Spread | None:
        nonlocal spreads
        if spreads is None:  # evaluated once, and only when an output needs a second opinion
            spreads = rounding_spread(fd.fusion, fd.example_inputs(seed=0)) or []
        return spreads[k] if k < len(spreads) else None

    for k, (o, r) in enumerate(zip(outs, refs)):
        _close(o, r, lambda k=k: spread(k))


@needs_gxx
@pytest.mark.parametrize("name", WORKS)
def test_script_runs_on_the_emulator(name: str):
    _emulate_and_compare(name)


@pytest.mark.parametrize("name", sorted(CHECKING_CODE))
def test_checking_code_after_the_run_is_skipped_and_recorded(name: str):
    first, last, count = CHECKING_CODE[name]
    skipped = load_fusion(SCRIPTS / f"{name}.py").skipped_statements
    assert (skipped[0].first_line, skipped[-1].last_line, len(skipped)) == (first, last, count)
    assert all("checking code after the run" in s.reason for s in skipped)


def test_scripts_without_checking_code_skip_nothing():
    for name in ("two_fusion_functions", "sched_two_fusion_classes", "layer_norm_var_mean"):
        assert load_fusion(SCRIPTS / f"{name}.py").skipped_statements == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsupported_script_is_refused_with_op_and_line(name: str):
    with pytest.raises(FusionFileError) as info:
        load_fusion(SCRIPTS / f"{name}.py")
    assert REFUSED[name] in str(info.value)


@pytest.mark.parametrize("name", sorted(COMPILE_REFUSED))
def test_unsupported_dtype_is_refused_at_compile(name: str):
    fd = load_fusion(SCRIPTS / f"{name}.py")
    with pytest.raises(CompileError) as info:
        compile_fusion(fd, fd.example_inputs(seed=0))
    assert COMPILE_REFUSED[name] in str(info.value)


@needs_gxx
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=r, strict=True))
                                  for n, r in sorted(KNOWN_BUGS.items())])
def test_known_engine_bug(name: str):
    _emulate_and_compare(name)
