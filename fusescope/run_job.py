"""Runs in the worker process (fusescope/worker.py): the emulator loads generated native code
and a GPU kernel may fault, and neither may take the debugger down. The job (a RunJob) carries
the fusion's text, not engine objects; the child compiles it itself, caching per options, runs
it segment by segment beside the reference evaluator, checks the outputs and profiles.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from engine import loads_fusion
from engine.compile_stages import fusion_flops
from engine.errors import EngineError, ExecutionError
from engine.reference import evaluate
from engine.runtime.device import current
from engine.runtime.placement import run_device
from engine.runtime.profiler import tensor_bytes
from fusescope.compile_options import CompileOptions
from fusescope.compiler import compile_definition
from fusescope.progress import Reporter
from fusescope.reference_check import check_output, compare_output
from fusescope.run_result import BACKENDS, OutputCheck, RunJob, RunResult, RunStatus, SegmentRun, TimelineRow
from fusescope.text_format import one_line
from fusescope.worker import Worker, report

# The worker child prints this before each segment runs, into its log: when the worker dies
# or hangs, the last such line in the log names the segment that was running.
RUNNING_MARK = "fusescope: running segment "


def name_segment(message: str, log: str) -> str:
    """`message` about a dead or hung worker, led by the segment that was running."""
    marks = [ln for ln in log.splitlines() if ln.startswith(RUNNING_MARK)]
    if not marks:
        return message
    mark = marks[-1]
    # The worker quotes its last output, which is this very line: once is enough.
    message = message.replace(f" (its last output: {mark[:200]})", "")
    return f"segment {mark[len(RUNNING_MARK):].strip()}: {message}"


_WORKER: object | None = None
_WORKER_LOCK = threading.Lock()


def worker() -> Any:
    """The session-wide worker process (started on first use, restarted after a crash)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = Worker(execute_job)
        return _WORKER


def shutdown_worker() -> None:
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is not None:
            _WORKER.stop()  # type: ignore[attr-defined]
            _WORKER = None


# In the worker process: compilations of the fusions it has been sent, by (text, options).
_CHILD_CACHE: dict[tuple[str, CompileOptions], tuple[Any, Any, list[Any]]] = {}


def execute_job(job: RunJob) -> RunResult:
    """The worker's job (runs in the child): compile, run, validate, optionally profile."""
    start = time.perf_counter()

    def failed(message: str) -> RunResult:
        return RunResult(job.backend, "error", message, job.options, job.profile,
                         wall_s=time.perf_counter() - start)

    if job.backend not in BACKENDS:
        return failed(f"unknown back end {job.backend!r}; choose one of {', '.join(BACKENDS)}")
    progress = Reporter(report)
    key = (job.source, job.options)
    progress.step("compiling the fusion at its example inputs" if key not in _CHILD_CACHE
                  else "the fusion is compiled already (the worker keeps it)")
    if key not in _CHILD_CACHE:
        try:
            fd = loads_fusion(job.source, job.filename)
        except EngineError as e:
            return failed(one_line(f"{type(e).__name__}: {e}"))
        cf, result = compile_definition(fd, job.options)
        if cf is None:
            return failed(f"compilation failed: {result.error}")
        _CHILD_CACHE[key] = (fd, cf, fd.example_inputs(device="cpu", seed=0, sizes=job.options.sizes()))
    fd, cf, xs = _CHILD_CACHE[key]
    try:
        return _run_compiled(fd, cf, xs, job, start, progress)
    except EngineError as e:
        return failed(one_line(f"{type(e).__name__}: {e}"))


def _run_compiled(fd: Any, cf: Any, xs: list[Any], job: RunJob, start: float, progress: Reporter) -> RunResult:
    backend = job.backend
    if backend == "cuda" and not torch.cuda.is_available():
        raise ExecutionError("the cuda back end needs a GPU (torch sees none here); use emulate or reference")
    # The back end's device (the worker's inputs are CPU tensors); the reference runs on the CPU.
    device = run_device(backend)
    cpu = torch.device("cpu")
    xs_dev = [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]

    # The segments run in order on the back end, each fed what the back end produced before
    # (as CompiledFusion.run does); the reference runs alongside, segment by segment, so that
    # each segment's outputs can be compared: two walks of the segments (cf.walk), in step.
    got, want = cf.walk(xs_dev), cf.walk(xs)

    profiling = job.profile and backend in ("emulate", "cuda")
    progress.plan(len(cf.segments), after=1 + profiling + (backend == "cuda"))
    if backend != "reference":
        cf.load_kernels(backend)  # all kernels at once (in parallel on the emulator), cached on disk
    seg_rows: dict[int, dict[str, Any]] = {}
    for index, ((seg, args), (_, ref_args)) in enumerate(zip(got, want), start=1):
        progress.segment(index, seg.id, str(seg.scheduler))
        print(f"{RUNNING_MARK}{seg.id} ({seg.kernel_name or seg.scheduler}) on {backend}", flush=True)
        progress.action("running the reference evaluator")
        t0 = time.perf_counter()
        try:
            ref_outs = seg.run(ref_args, "reference", cpu)
        except ExecutionError as e:
            if str(e).startswith(f"segment {seg.id} "):
                raise  # the engine named the segment and the op already
            raise ExecutionError(f"segment {seg.id}: the reference failed: {e}") from e
        except Exception as e:
            raise ExecutionError(f"segment {seg.id}: the reference failed: {type(e).__name__}: {e}") from e
        if backend == "reference":
            outs = ref_outs
        else:
            if seg.is_kernel:
                progress.action(f"building the kernel ({'g++' if backend == 'emulate' else 'nvrtc'})")
                seg.kernel(backend)  # compile/load outside the timed launch (cached on disk)
            progress.action(f"running on {backend}")
            t0 = time.perf_counter()
            try:
                outs = seg.run(args, backend, device)
                if backend == "cuda":
                    torch.cuda.synchronize()
            except ExecutionError as e:
                if str(e).startswith(f"segment {seg.id} "):
                    raise  # the engine named the segment already (sync_launches)
                raise ExecutionError(f"segment {seg.id} ({seg.kernel_name or seg.scheduler}): {e}") from e
        ms = (time.perf_counter() - t0) * 1e3
        errs = [compare_output(o, r)[0] for o, r in zip(outs, ref_outs) if isinstance(r, torch.Tensor)]
        nbytes = sum(tensor_bytes(t) for t in [*args, *outs] if isinstance(t, torch.Tensor))
        seg_rows[seg.id] = {"time_ms": ms, "bytes": nbytes, "max_error": max(errs) if errs else None,
                            "flops": _flops(fusion_flops, seg, ref_args)}
        got.put(seg, outs)
        want.put(seg, ref_outs)
        progress.segment_done()
    finals = got.outputs()
    progress.step("checking the outputs against the reference evaluator")

    # The fusion's outputs are checked against the reference evaluator on the whole,
    # unsegmented fusion: that also catches a wrong cut between segments.
    refs = evaluate(fd.fusion, xs)
    checks = []
    for v, o, r in zip(fd.fusion.outputs, finals, refs):
        if not isinstance(r, torch.Tensor):
            continue
        err, tol, ok, note, rtol = check_output(o, r)
        checks.append(OutputCheck(getattr(v, "short_name", str(v)), err, tol, ok, note, rtol))

    profiles: dict[str, Any] = {}
    timing = {"emulate": "host wall time of each emulated launch (says nothing about a GPU)",
              "reference": "host wall time of the reference evaluator (torch on the CPU)",
              "cuda": "host wall time of each launch until synchronized (no --profile)"}[backend]
    dev_name = {"emulate": "CPU emulator (g++)", "reference": "torch CPU reference"}.get(backend, "")
    if profiling:
        progress.step(f"profiling the {sum(s.is_kernel for s in cf.segments)} kernel(s) on {backend}")
        profiles = {p.name: p for p in cf.profile(xs_dev, backend)}
        timing = ("CUDA events, median of 20 launches after warm-up" if backend == "cuda"
                  else "emulator wall time of one launch (says nothing about a GPU)")
    timeline: tuple[TimelineRow, ...] = ()
    if backend == "cuda":
        dev_name = torch.cuda.get_device_name(device)
        progress.step("recording the host program's stream timeline")
        # The host program once more, recording its stream timeline (for the Host IR tab).
        cf.run(xs_dev, backend="cuda", timeline=True)
        timeline = tuple(TimelineRow(e.op, e.stream, e.start, e.end, e.iteration) for e in cf.last_run.timeline)
    sf = getattr(cf, "segmented", None)
    boundary = sum(int(d["bytes"]) for _, _, d in sf.to_networkx().edges(data=True)) if sf is not None else None

    rows = []
    for seg in cf.segments:
        r = seg_rows[seg.id]
        p = profiles.get(seg.kernel_name or "")
        note = "" if seg.is_kernel else "no kernel (reference evaluator)"
        rows.append(SegmentRun(
            segment=seg.id, scheduler=str(seg.scheduler), kernel=seg.kernel_name,
            time_ms=p.time_ms if p is not None else r["time_ms"],
            bytes=(p.bytes_total if p is not None and p.bytes_total is not None else r["bytes"]),
            gbps=p.gbps if p is not None else None,
            peak_fraction=p.peak_fraction if p is not None else None,
            max_error=r["max_error"],
            registers=p.registers if p is not None else None,
            occupancy=p.occupancy if p is not None else None,
            note=note,
            local_bytes=p.local_bytes if p is not None else None,
            flops=r["flops"],
        ))
    bad = [c for c in checks if not c.ok]
    if bad:
        status: RunStatus = "mismatch"
        message = "; ".join(f"{c.name} differs from the reference by {c.max_error:.3e} ({c.tolerance_text})"
                            for c in bad)
    else:
        status = "ok"
        message = f"{len(checks)} output(s) match the reference"
    ceilings = current(job.options.device_model)
    return RunResult(backend, status, message, job.options, bool(profiles), tuple(rows), tuple(checks),
                     timing, dev_name, time.perf_counter() - start, boundary, timeline,
                     ceilings.name, ceilings.memory_bandwidth_gbps, ceilings.peak_fp32_gflops or None)


def _flops(count: Callable[[Any, list[Any]], int], seg: Any, args: list[Any]) -> int | None:
    """The segment's element operations at its inputs' sizes; None where its inputs cannot be
    bound (a raw buffer input) or an extent has no value."""
    if seg.raw_inputs:
        return None
    try:
        return count(seg.fusion, args)
    except (KeyError, TypeError, ValueError, EngineError):
        return None
