"""The session's compilations and runs (fusescope.model), and the worker process that runs them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from fusescope import samples
from fusescope.model import (
    CompileOptions,
    OutputCheck,
    RunResult,
    Session,
    _check,
    load_session,
    session_from_source,
)
from fusescope.worker import Worker
from tests.fusescope.fusions import SYMBOLIC_FILE
from tests.fusescope.worker_jobs import dispatch


def sample(name: str) -> Path:
    path = samples.resolve(name)
    # The samples ship with the project: a missing one is a failure, not a skip.
    assert path.exists(), f"bundled sample {name} is missing"
    return path


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = Worker(dispatch)
    yield w
    w.stop()


def test_worker_survives_errors_crashes_and_hangs(worker: Worker) -> None:
    ok = worker.call("echo", timeout=60)
    assert ok.status == "ok" and ok.value[:2] == ("echo", "echo")
    first_pid = ok.value[2]
    assert first_pid != os.getpid() and worker.started == 1

    err = worker.call("fail", timeout=60)
    assert err.status == "error" and err.message == "ValueError: bad job | second line"
    assert "Traceback" in err.details
    assert worker.call("echo", timeout=60).value[2] == first_pid  # an error keeps the worker

    dead = worker.call("crash", timeout=60)
    assert dead.status == "crashed"
    assert dead.message.startswith("the worker process died (signal SIGABRT) during the run")
    again = worker.call("echo", timeout=60)
    assert again.status == "ok" and again.value[2] != first_pid and worker.started == 2

    hung = worker.call("hang", timeout=1)
    assert hung.status == "timeout" and "longer than 1 s" in hung.message
    assert not worker.alive
    assert worker.call("echo", timeout=60).status == "ok" and worker.started == 3


# ---- compilations --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cross_entropy() -> Session:
    return load_session(sample("cross_entropy"))


def test_compile_cross_entropy_gives_two_segments_and_the_merge_log(cross_entropy: Session) -> None:
    result = cross_entropy.compile()
    assert result.ok and cross_entropy.compile() is result  # cached per options
    assert [(s.id, s.scheduler) for s in result.segments] == [
        (0, "inner_persistent"), (1, "reduction")]
    assert [(e.producer, e.consumer, e.tensors) for e in result.edges] == [(0, 1, ("T13",))]
    assert result.edges[0].bytes == 128
    s0 = result.segment(0)
    assert s0.kernel_name == "nvfuser_inner_persistent_f0_c0_r0_g0" and s0.ops == 12
    assert s0.kernel_source.startswith('extern "C" __global__ void ')
    assert "nvfuser_inner_persistent_f0_c0_r0_g0(Tensor<float, 2, 2> T0" in s0.kernel_source
    assert s0.cuda_source is not None and s0.cuda_source.endswith(s0.kernel_source)
    assert s0.runtime_lines > 100  # the runtime headers ahead of the kernel
    assert s0.launch is not None and s0.launch.startswith("Launch Parameters: BlockDim.x = ")
    assert "===== Reduction Parameters ========" in s0.params
    assert dict(s0.stages).keys() >= {"loop_nests", "kernel_ir"}
    refused = [d for d in result.decisions if d.kind == "merge" and d.accepted is False]
    assert refused and all(d.refusals for d in refused)
    assert any(r.startswith("pointwise: ") for r in refused[0].refusals)
    assert result.segmented_text.startswith("Segmented_Fusion Dump: -- fusion segments:")
    with pytest.raises(KeyError, match=r"no segment 7 \(segments: 0, 1\)"):
        result.segment(7)


def load_session_text(text: str) -> Session:
    return session_from_source(text, "symbolic.py")


def test_a_compile_failure_is_one_line() -> None:
    # Without an `inputs = [...]` list and with symbolic sizes: nothing to compile for.
    session = load_session_text(SYMBOLIC_FILE)
    result = session.compile()
    assert not result.ok and result.segments == []
    assert result.error is not None and result.error.startswith("no example inputs: ")
    assert "\n" not in result.error
    assert result.summary() == f"No compilation: {result.error}\n"
    run = session.run("emulate")
    assert run.status == "error" and run.message.startswith("compilation failed: no example inputs")


def test_input_sizes_compile_and_run_a_fusion_without_inputs() -> None:
    # --size's option: the worker makes the same inputs from the definition at those sizes
    session = load_session_text(SYMBOLIC_FILE)
    options = CompileOptions().with_(input_sizes={"T0": (6, 10)})  # T1's size is T0's first
    assert session.compile(options).ok
    run = session.run("emulate", options)
    assert run.status == "ok", run.message
    assert run.options.input_sizes == (("T0", (6, 10)),)
    assert CompileOptions.from_dict(options.to_dict()) == options  # bundles keep the sizes
    assert "sizes T0=6,10" in options.describe()


def test_options_make_a_separate_compilation(cross_entropy: Session) -> None:
    forced = cross_entropy.compile(CompileOptions(force_scheduler="pointwise"))
    assert forced is not cross_entropy.compile()
    assert forced.options.force_scheduler == "pointwise"
    assert cross_entropy.compiled(CompileOptions(force_scheduler="pointwise")) is forced


# ---- runs --------------------------------------------------------------------------------------
def test_run_on_the_emulator_validates_each_segment(cross_entropy: Session) -> None:
    result = cross_entropy.run("emulate", profile=True)
    assert result.status == "ok", result.message
    assert [s.segment for s in result.segments] == [0, 1]
    assert all(s.max_error is not None and s.max_error < 1e-4 for s in result.segments)
    assert all(s.time_ms is not None and s.time_ms > 0 and s.bytes for s in result.segments)
    assert result.profiled and "emulator" in result.timing
    assert [o.name for o in result.outputs] == ["T16"] and result.outputs[0].ok
    assert "ok: 1 output(s) match the reference" in result.report()


def test_run_on_cuda_without_a_gpu_says_so(cross_entropy: Session) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = cross_entropy.run("cuda")
    assert result.status == "error" and "needs a GPU" in result.message
    assert result.segments == ()


def test_check_flags_a_mismatch_and_tolerates_rounding() -> None:
    ref = torch.linspace(-2, 2, 100)
    err, tol, ok, _, rtol = _check(ref + 1e-7, ref)
    assert ok and err == pytest.approx(1e-7, rel=0.5) and tol == pytest.approx(2e-5) and rtol == 1e-5
    bad = ref.clone()
    bad[3] += 0.5
    err, _, ok, _, _ = _check(bad, ref)
    assert not ok and err == pytest.approx(0.5)
    nan = torch.tensor([float("nan"), 1.0])
    assert _check(nan.clone(), nan)[2]  # NaN where the reference has NaN is a match
    assert not _check(torch.tensor([1, 2]), torch.tensor([1, 3]))[2]  # integers are exact
    assert _check(torch.tensor([1, 2]), torch.tensor([1, 2]))[4] == 0.0


def test_the_tolerance_says_what_it_is() -> None:
    ref = torch.linspace(-2, 2, 100, dtype=torch.bfloat16)
    err, tol, ok, note, rtol = _check(ref, ref)
    check = OutputCheck("T3", err, tol, ok, note, rtol)
    assert check.tolerance_text == "tolerance 2.0e-02 = rtol 1e-02 x max(1, max |reference|)"
    assert OutputCheck("T4", 0.0, 0.0, True, "", 0.0).tolerance_text == "must match exactly"
    assert OutputCheck("T5", 0.0, 3e-5, True).tolerance_text == "tolerance 3.0e-05"  # an old bundle's
    line = RunResult("emulate", "ok", "1 output(s) match the reference", CompileOptions(), False,
                     outputs=(check,)).report().splitlines()[1]
    assert line == f"output T3: max error 0.000e+00 ({check.tolerance_text}) ok"


def test_a_segments_local_memory_is_kept_in_runs_and_bundles(cross_entropy: Session) -> None:
    from fusescope.model import SegmentRun, run_from_dict

    result = cross_entropy.run("emulate", profile=True)
    assert all(s.local_bytes is None for s in result.segments)  # the emulator has no such figure
    spilled = SegmentRun(0, "reduction", "k0", 0.1, 4096, 40.0, 0.01, 0.0, 40, 0.5, local_bytes=1536)
    d = dict(result.to_dict(), segments=[spilled.to_dict()])
    again = run_from_dict(d)
    assert again.segments[0].local_bytes == 1536
    assert "local" in again.report().splitlines()[2] and " 1536 " in again.report().splitlines()[3]
    del d["segments"][0]["local_bytes"]  # a bundle saved before the field existed
    assert run_from_dict(d).segments[0].local_bytes is None


@pytest.mark.gpu
def test_a_cuda_profile_gives_each_kernel_its_local_memory(cross_entropy: Session) -> None:
    result = cross_entropy.run("cuda", profile=True)
    assert result.status == "ok", result.message
    kernels = [s for s in result.segments if s.kernel]
    assert kernels and all(s.local_bytes is not None and s.local_bytes >= 0 for s in kernels)
