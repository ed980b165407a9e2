"""Real-world repro scripts (tests/realworld/scripts): nvFuser python-frontend files in the
spellings of 2022-2026 (old and new argument names, Thunder traces, nvfuser_direct), each
loaded without executing it, compiled (segment, schedule, lower, render), emulated on the
CPU and compared with the reference evaluator. Scripts using what the engine genuinely
lacks are refused, and the test pins the message (op and line). Each script's header
names the issue or file it is modelled on."""

import shutil
from pathlib import Path

import pytest
import torch

from engine import load_fusion
from engine.compile import compile_fusion
from engine.errors import CompileError, FusionFileError
from engine.reference import evaluate

SCRIPTS = Path(__file__).resolve().parent / "scripts"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to emulate kernels")

# Scripts that load, compile and match the reference on the emulator.
WORKS = [
    "addcmul_threshold_stride_order", "alias_running_stats", "argsort_gather", "batch_norm_train",
    "causal_mask_triu", "cumsum_position_ids", "direct_alpha_bmm", "embedding_bwd_index_put", "grouped_mm_moe",
    "direct_frontend", "embedding_fwd", "execute_device_scalars",
    "expand_where_clamp", "factories", "fp8_cast", "full_symbolic", "gelu_erf_bwd", "gelu_tanh",
    "index_select_gather", "iota_arange", "layer_norm_bwd", "layer_norm_var_mean", "matmul_linear",
    "mean_sub_col_sum", "old_define_constant", "old_max_axes", "rand_like", "reshape_define_vector",
    "reshape_original_shape", "rms_norm_bwd", "rope_cat_pad", "scalar_arith", "scatter", "sdpa_fwd",
    "set_segment_set", "size_shape_ops",
    "sizes_strides",
    "slice_strides", "softmax_dims", "special_math", "squeeze_forms", "stride_order_channels_last",
    "subclass_schedule", "symbolic_sizes_contiguous", "tensor_sizes_bcast", "topk_router", "two_fusion_functions",
    "uniform_dropout", "var_correction",
]

# Genuinely unsupported features: refused while loading, with the op and the line.
REFUSED = {
    "slice_step2": "slice_step2.py:9: fd.ops.slice: slice: T0 axis 1: only stride 1 is supported, got 2",
    "complex_constant": "complex_constant.py:11: fd.define_scalar: define_scalar: complex constants are "
                        "not supported",
}

# Loaded fine; the code generator has no complex arithmetic: refused at compile time.
COMPILE_REFUSED = {
    "complex_mul": "mul: complex types (std::complex<float>) are not supported by the CUDA code generator",
}

# Engine bugs these scripts found (scheduling/lowering, outside the frontend): strict xfail,
# so a fix shows up as XPASS and the script moves to WORKS.
KNOWN_BUGS = {
}


def test_every_script_is_listed():
    listed = {*WORKS, *REFUSED, *COMPILE_REFUSED, *KNOWN_BUGS}
    assert {p.stem for p in SCRIPTS.glob("*.py")} == listed
    assert len(listed) >= 30


def _close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if out.element_size() == 1 and out.dtype.is_floating_point:  # fp8: bit-exact
        assert torch.equal(out.view(torch.uint8), ref.view(torch.uint8))
    elif not out.dtype.is_floating_point:
        assert torch.equal(out, ref)
    else:
        tol = 1e-5 if out.dtype in (torch.float32, torch.float64) else 1e-2
        torch.testing.assert_close(out.double(), ref.double(), rtol=tol,
                                   atol=tol * max(1.0, ref.abs().max().item()))


def _emulate_and_compare(name: str) -> None:
    fd = load_fusion(SCRIPTS / f"{name}.py")
    xs = fd.example_inputs(seed=0)
    outs = compile_fusion(fd, xs).run(xs, backend="emulate")
    refs = evaluate(fd.fusion, fd.example_inputs(seed=0))
    assert len(outs) == len(refs) == len(fd.fusion.outputs)
    for o, r in zip(outs, refs):
        _close(o, r)


@needs_gxx
@pytest.mark.parametrize("name", WORKS)
def test_script_runs_on_the_emulator(name: str):
    _emulate_and_compare(name)


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
