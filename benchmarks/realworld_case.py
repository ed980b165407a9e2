"""One case of the real-size sweep (benchmarks/realworld.py): a fusion file at one size, run by
the engine and by nvFuser on the same inputs in one process, kept as a record (a dict that
becomes one JSON line).

Sizes: "own" (the file's inputs), "real" (its `# real-sizes:` line), "model" (size_sweep's
model scale, largest dim 4096, for a file without the line) and "reduced" (the GPU tests'
sizes, scripts/scales.py's reduced_real_scale).

A case: the fusion and its inputs at the size, on the device (a rewrite that does not hold
together is tried again mapping exact values only, as size_sweep does); the reference
(engine.reference.evaluate on those inputs); the engine's compile (the fusion cache cleared
first) and its kernel loads, timed apart; one cf.run checked against the reference
(tests/realworld's _close tolerances, elements beyond them judged against the fusion in float64
as the tests judge them, tests/rounding.py; and the max abs error); one more under torch.profiler
for the kernels launched; then cf.run and fd.execute timed (benchmarks/timing.py: CUDA events,
rotating input sets) and every kernel profiled (cf.profile). nvFuser gets the same definition
replayed on its frontend (benchmarks/nvf.py), the same check, count and timing. A call whose
kernels take a third of the timing budget or more (in the profiled call's trace) is not
repeated: their device time is its figure, and the engine's fd.execute and cf.profile are
skipped (the kernel times come from the trace); a call as slow on the host is timed once, by
the wall clock.
"""

from __future__ import annotations

import gc
import json
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from benchmarks.timing import input_sets_needed, time_calls
from engine.errors import ExecutionError, FusionDefinitionError
from engine.host import graph_plan
from scripts.attention_state import attention_state_from_the_forward
from scripts.scales import (
    Scale,
    UnscalableError,
    first_line,
    input_values,
    model_scale,
    real_scale,
    reduced_real_scale,
    rescalable,
    scaled_fusion,
    scaled_inputs,
)

SIZES = ("own", "real", "model", "reduced")
# Calls made before the engine's kernels are counted, where the first call took under
# WARM_CALLS_BELOW_S: those the run plan's CUDA-graph decision takes (plain calls, the
# capture, the timed replays), and one more.
WARM_CALLS = graph_plan.PLAIN_RUNS + 1 + graph_plan.TIMED_REPLAYS + 1
WARM_CALLS_BELOW_S = 0.5


class CudaLostError(Exception):
    """The CUDA context is broken: this process cannot go on (the driver starts a new one)."""


@dataclass
class Env:
    """What every case shares."""

    device: str  # "cuda" or "cpu"
    backend: str  # the engine's back end: "cuda" or "emulate"
    timing: bool  # time and count the calls (the emulate dry run does not)
    nvf: Any  # nvfuser_direct, or None
    l2_bytes: int
    time_s: float  # timing budget of one timed function
    cap: int  # most elements of one input tensor
    reduced_elems: int  # the "reduced" size's bound on input elements
    stage: Callable[[str], None]  # records the stage in flight (the driver's progress file)
    checkpoint: Callable[[dict[str, Any]], None] = lambda rec: None  # writes a case's record so far


def plan_sizes(text: str, xs0: list[Any], wanted: Sequence[str], own_always: bool,
               reduced_elems: int, stem: str = "") -> list[tuple[str, Scale | None]]:
    """The (size, scale) pairs a file runs at: the real size where its `# real-sizes:` line
    is (and its own only with own_always), else its own and the model scale; "reduced" where
    asked for. A file that is not rescaled (scripts/scales.py's rescalable, by its text and
    `stem`: a hand-written schedule, scatter), as in the GPU tests, runs at its own size
    only. ValueError for a malformed line."""
    if not rescalable(text, stem):
        return [("own", None)] if "own" in wanted else []
    real = real_scale(text)
    out: list[tuple[str, Scale | None]] = []
    if "own" in wanted and (real is None or own_always):
        out.append(("own", None))
    if "real" in wanted and real is not None:
        out.append(("real", real))
    model = model_scale(input_values(xs0)[0])
    if "model" in wanted and real is None and model is not None:
        out.append(("model", model))
    reduced = reduced_real_scale(text, xs0, reduced_elems) if "reduced" in wanted else None
    if reduced is not None:
        out.append(("reduced", reduced))
    return out


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def cuda_alive(device: str) -> bool:
    if device != "cuda":
        return True
    try:
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001 - any failure here means the context is gone
        return False


# ---- measurements ---------------------------------------------------------------------------------
# Packed fp4 pairs and e8m0 scales: CUDA conversions of these to float raised device-side
# asserts that end the CUDA context.
BYTE_COMPARED = (torch.float4_e2m1fn_x2, torch.float8_e8m0fnu)


def max_abs_error(out: torch.Tensor, ref: torch.Tensor, chunk: int = 1 << 26) -> float | None:
    """The largest |out - ref| (equal infinities and NaN against NaN count as 0), in float32
    (float64 for float64 and integer outputs) a chunk of elements at a time, so a large output
    needs no full-size temporaries; None where the values do not convert (packed fp4) or the
    shapes differ."""
    if out.shape != ref.shape:
        return None
    if out.dtype in BYTE_COMPARED:  # no arithmetic: equal bytes or not
        return 0.0 if torch.equal(out.view(torch.uint8), ref.view(torch.uint8)) else math.inf
    work = torch.float64 if torch.float64 in (out.dtype, ref.dtype) or not out.dtype.is_floating_point \
        else torch.float32
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    worst = 0.0
    try:
        for i in range(0, flat_out.numel(), chunk):
            a, b = flat_out[i:i + chunk].to(work), flat_ref[i:i + chunk].to(work)
            d = (a - b).abs().masked_fill_((a == b) | (a.isnan() & b.isnan()), 0).nan_to_num_(nan=math.inf)
            worst = max(worst, float(d.max()))
    except (RuntimeError, TypeError):
        return None
    return worst


Spreads = Callable[[int], Any]  # output index -> tests.rounding.Spread or None


def rounding_spreads(fusion: Any, inputs: Callable[[], list[Any]]) -> Spreads:
    """Output k's tests.rounding.Spread (the fusion in float64, and again under rounding-sized
    changes of every intermediate value) at `inputs()`, or None: evaluated once, when an output
    first differs beyond its tolerance."""
    from tests.rounding import rounding_spread

    got: list[list[Any]] = []

    def spread(k: int) -> Any:
        if not got:
            got.append(rounding_spread(fusion, inputs()) or [])
        return got[0][k] if k < len(got[0]) else None

    return spread


def check_outputs(outs: Sequence[Any], refs: Sequence[Any], spreads: Spreads | None = None) -> dict[str, Any]:
    """Each output against the reference: tests/realworld's _close (on the CPU where the GPU
    has no memory left for its float64 copies), and the max abs error. Elements beyond the
    dtype's tolerance pass where `spreads` (rounding_spreads, by output index) shows rounding
    explains them, as in the tests (tests/rounding.py): a float mean over bf16-rounded values
    moves by 1.5e-5 when one of 2048 elements rounds one ulp the other way, beyond float32's
    1e-5 (dropout_uniform_seed_offset_residual_layer_norm_fwd_bf16 on the H200, nvFuser's
    numbers the engine's). A reference tensor on another device than its output is moved to
    the output's first: the reference of a fusion without tensor inputs runs on the CPU, its
    outputs on the GPU (full_slice_cast_no_inputs; the tests' harness moves one side likewise,
    tests/fuzz/harness.py)."""
    from tests.realworld.test_realworld import _close

    rows: list[dict[str, Any]] = []
    for k, (o, r) in enumerate(zip(outs, refs)):
        if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and r.device != o.device:
            r = r.to(o.device)
        row: dict[str, Any] = {"max_abs_err": max_abs_error(o, r) if isinstance(o, torch.Tensor) else None}
        spread = None if spreads is None else (lambda k=k: spreads(k))
        try:
            try:
                _close(o, r, spread)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()
                row["judged_on"] = "cpu (out of GPU memory)"
                _close(o.cpu(), r.cpu(), spread)
            row["ok"] = True
        except AssertionError as e:
            row["ok"], row["why"] = False, (str(e).strip().splitlines() or ["differs"])[0][:300]
        rows.append(row)
    if len(outs) != len(refs):
        rows.append({"ok": False, "why": f"{len(outs)} outputs, the reference has {len(refs)}"})
    errs = [r["max_abs_err"] for r in rows if r.get("max_abs_err") is not None]
    return {"matched": all(r["ok"] for r in rows), "max_abs_err": max(errs, default=None), "outputs": rows}


def launched_kernels(fn: Callable[[], Any]) -> dict[str, Any]:
    """One call of `fn` under torch.profiler: the CUDA kernels the device ran (CUPTI's kernel
    records, whoever launched them: the engine through cupy, torch, nvFuser), their names and
    summed device times (us), and the call's wall clock (s, with the profiler's overhead)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    kernels = [e for e in events if str(e.get("cat", "")).lower() == "kernel"]
    us: dict[str, float] = {}
    for e in kernels:
        us[e["name"]] = us.get(e["name"], 0.0) + float(e.get("dur", 0.0))
    return {"count": len(kernels), "names": sorted(us), "us": us, "wall_s": wall}


def count_kernels(fn: Callable[[], Any], env: Env) -> dict[str, Any]:
    """launched_kernels, or where the profiler fails (no CUPTI), no count and the error: the
    timing goes on without it."""
    try:
        return launched_kernels(fn)
    except Exception as e:  # noqa: BLE001
        if not cuda_alive(env.device):
            raise
        return {"count": None, "names": [], "us": {}, "wall_s": None, "error": first_line(e)}


def timed(fn: Callable[[Any], Any], sets: list[Any], env: Env, launched: dict[str, Any]) -> dict[str, Any]:
    """The median time of fn(set) (benchmarks/timing.time_calls: CUDA events, rotating sets),
    its warm-up and repetitions sized so it costs about env.time_s. A slow call is not repeated:
    where the kernels of the profiled call (`launched`) took a third of env.time_s or more,
    their device time is the figure; where one plain call takes that long, its wall clock."""
    device_s = sum(launched["us"].values()) * 1e-6
    if device_s * 3 >= env.time_s:
        return {"median_ms": device_s * 1e3, "reps": 1, "sets": 1,
                "method": "one call: its kernels' device time (torch.profiler)"}
    t = time.perf_counter()
    fn(sets[0])
    sync(env.device)
    one = time.perf_counter() - t
    if one * 3 >= env.time_s:
        return {"median_ms": one * 1e3, "reps": 1, "sets": 1, "method": "one call, wall clock"}
    warmup = max(1, min(5, int(0.2 * env.time_s / max(one, 1e-6))))
    r = time_calls(fn, sets, device=env.device, warmup=warmup, target_ms=600 * env.time_s, min_reps=3)
    r["method"] = "CUDA events" if env.device == "cuda" else "wall clock"
    r["one_call_ms"] = one * 1e3
    return r


def kernel_rows(cf: Any, env: Env, times_us: dict[str, float], method: str | None) -> list[dict[str, Any]]:
    """A row per kernel segment: name, segment, scheduler, time, registers, local memory per
    thread (cuFuncGetAttribute's LOCAL_SIZE_BYTES: spills and local arrays), occupancy."""
    rows = []
    for seg in (s for s in cf.segments if s.is_kernel):
        row: dict[str, Any] = {"name": seg.kernel_name, "segment": seg.id, "scheduler": seg.scheduler,
                               "time_us": times_us.get(seg.kernel_name or ""), "time_method": method,
                               "grid": list(seg.launch.grid), "block": list(seg.launch.block),
                               "smem_dynamic": seg.launch.shared_mem_bytes}
        if env.backend == "cuda":
            k = seg.kernel("cuda")
            row.update(registers=k.attributes.registers, local_bytes=k.attributes.local_bytes,
                       smem_static=k.attributes.static_shared_bytes,
                       occupancy=k.occupancy(seg.launch).fraction)
        rows.append(row)
    return rows


# ---- the case -------------------------------------------------------------------------------------
def build(rec: dict[str, Any], path: Path, text: str, fd0: Any, xs0: list[Any], scale: Scale | None,
          env: Env) -> tuple[Any, Callable[[int], list[Any]], list[Any], list[Any] | None]:
    """The fusion at the case's size, a maker of input sets (by seed), set 0 and the reference
    outputs for it (None where the reference failed for another reason than the sizes). An
    attention backward's saved output and log-sum-exp come from its forward, as in the GPU
    tests (scripts.attention_state): drawn at random they overflow exp() at real sizes."""
    from engine.reference import evaluate

    def reference(fd: Any, xs: list[Any]) -> list[Any] | None:
        env.stage("reference")
        try:
            return evaluate(fd.fusion, xs)
        except (ExecutionError, FusionDefinitionError):
            raise
        except Exception as e:  # noqa: BLE001 - out of memory, an op the reference lacks on CUDA
            if not cuda_alive(env.device):
                raise
            rec["reference_error"] = first_line(e)
            return None

    env.stage("build")
    if scale is None:
        def own(seed: int) -> list[Any]:
            return attention_state_from_the_forward(fd0, fd0.example_inputs(device=env.device, seed=seed))

        xs = own(0)
        return fd0, own, xs, reference(fd0, xs)
    specs = fd0.input_specs or [None] * len(xs0)
    why = ""
    for s in (scale, Scale(scale.label, scale.chosen, multiples=False)):
        try:
            fd, xs = scaled_fusion(path, text, s, xs0, specs, env.cap, env.device)
            xs = attention_state_from_the_forward(fd, xs)
            refs = reference(fd, xs)
        except UnscalableError as e:
            if "over the cap" in str(e):
                raise
            why = str(e)
            continue
        except (ExecutionError, FusionDefinitionError) as e:
            why = first_line(e)  # the new sizes do not fit the fusion's own constants
            continue
        rec["label"] = s.label + ("" if s.multiples else " (exact values only)")

        def scaled(seed: int, s: Scale = s, fd: Any = fd) -> list[Any]:
            return attention_state_from_the_forward(fd, scaled_inputs(s, xs0, specs, env.cap, env.device, seed))

        return fd, scaled, xs, refs
    raise UnscalableError(why)


def engine_part(rec: dict[str, Any], fd: Any, sets: list[Any], refs: list[Any] | None, env: Env,
                spreads: Spreads | None = None) -> None:
    from engine import compile_fusion, fusion_cache

    xs = sets[0]
    env.stage("compile")
    fusion_cache.clear()
    gc.collect()
    t = time.perf_counter()
    cf = compile_fusion(fd, xs)
    rec["compile_s"] = time.perf_counter() - t
    kernels = [s for s in cf.segments if s.is_kernel]
    rec.update(segments=len(cf.segments), kernel_segments=len(kernels),
               schedulers=[s.scheduler for s in cf.segments])
    env.stage("kernel load")
    t = time.perf_counter()
    loaded = [s.kernel(env.backend) for s in kernels]
    rec["load_s"] = time.perf_counter() - t
    rec["nvrtc_s"] = sum(getattr(k, "compile_time_s", 0.0) or 0.0 for k in loaded if not getattr(k, "cached", False))
    env.stage("run")
    t = time.perf_counter()
    outs = cf.run(xs, backend=env.backend)
    sync(env.device)
    rec["first_run_s"] = time.perf_counter() - t
    if refs is not None:
        rec.update(check_outputs(outs, refs, spreads))
    del outs
    if not env.timing:
        rec.update(engine_kernels=len(kernels), kernel_count_method="kernel segments (no run counted)",
                   kernels=kernel_rows(cf, env, {}, None))
        return
    env.stage("engine kernel count")
    if rec["first_run_s"] < WARM_CALLS_BELOW_S:
        # The run plan decides on a CUDA graph over its first calls (engine.host.graph_plan),
        # some of which repeat the plan to time it: the call counted is one after those.
        for _ in range(WARM_CALLS):
            cf.run(xs, backend=env.backend)
        sync(env.device)
    launched = count_kernels(lambda: cf.run(xs, backend=env.backend), env)
    rec.update(engine_kernels=launched["count"], engine_kernel_names=launched["names"],
               kernel_count_method="torch.profiler: CUDA kernel records of one call")
    if "error" in launched:
        rec["kernel_count_error"] = launched["error"]
    env.stage("engine timing")
    run = rec["engine_run"] = timed(lambda x: cf.run(x, backend=env.backend), sets, env, launched)
    if run["reps"] == 1:  # slow: neither fd.execute nor cf.profile repeat it
        rec["engine_execute"] = {"skipped": f"one cf.run call takes {run['median_ms'] / 1e3:.2f} s"}
        rec["kernels"] = kernel_rows(cf, env, launched["us"], "one call under torch.profiler")
    else:
        env.stage("fd.execute timing")
        fd.execute(xs)  # compiles for this signature (a fusion-cache hit)
        rec["engine_execute"] = timed(lambda x: fd.execute(x), sets, env, launched)
        env.stage("engine profile")
        repeat = max(3, min(20, int(0.3 * env.time_s / max(run["one_call_ms"] / 1e3, 1e-6))))
        profs = cf.profile(xs, backend=env.backend, warmup=2, repeat=repeat)
        rec["kernels"] = kernel_rows(cf, env, {p.name: p.time_ms * 1e3 for p in profs},
                                     f"cf.profile, median of {repeat}")


def nvfuser_part(rec: dict[str, Any], fd: Any, sets: list[Any], refs: list[Any] | None,
                 fresh: Callable[[], list[Any]], env: Env, spreads: Spreads | None = None) -> None:
    from benchmarks.nvf import mirror

    nv: dict[str, Any] = rec.setdefault("nvfuser", {})
    env.stage("nvfuser mirror")
    nfd = mirror(fd, env.nvf)
    env.stage("nvfuser first call")
    # The engine's fd.execute has written its aliased outputs into set 0: a fresh copy.
    xs = fresh() if fd.output_aliases else sets[0]
    t = time.perf_counter()
    outs = list(nfd.execute(xs))
    sync(env.device)
    nv["first_call_s"] = time.perf_counter() - t
    if refs is not None:
        # nvFuser returns no aliased outputs: its k-th is the reference's returned[k]-th.
        returned = [k for k in range(len(refs)) if k not in fd.output_aliases]
        nv.update(check_outputs(outs, [refs[k] for k in returned],
                                None if spreads is None else lambda j: spreads(returned[j])))
    del outs, xs
    env.stage("nvfuser kernel count")
    launched = count_kernels(lambda: nfd.execute(sets[0]), env)
    nv.update(kernels=launched["count"], kernel_names=launched["names"], kernel_us=launched["us"])
    if "error" in launched:
        nv["kernel_count_error"] = launched["error"]
    env.stage("nvfuser timing")
    nv["time"] = timed(lambda x: nfd.execute(x), sets, env, launched)


def status_of(rec: dict[str, Any]) -> str:
    if "error" in rec:
        return {"compile": "compile-error", "kernel load": "load-error", "run": "run-error"}.get(
            rec.get("stage", ""), "error")
    if rec.get("matched") is False:
        return "mismatch"
    return "ok" if rec.get("matched") else "unchecked"


def run_case(script: str, path: Path, text: str, fd0: Any, xs0: list[Any], size: str,
             scale: Scale | None, env: Env) -> dict[str, Any]:
    """The record of `script` at one size. CudaLostError (with the record as its argument) when the
    case broke the CUDA context: the record is written and the process ends."""
    rec: dict[str, Any] = {"key": f"{script}@{size}", "script": script, "file": str(path), "size": size,
                           "label": scale.label if scale is not None else "own"}
    start = time.perf_counter()
    stage = "build"

    def note_stage(name: str) -> None:
        nonlocal stage
        stage = name
        env.stage(name)

    def failed(e: Exception, into: dict[str, Any]) -> None:
        into.update(stage=stage, error=first_line(e)[:500])
        if not cuda_alive(env.device):
            into["error"] += " (the CUDA context is lost)"
            rec["status"], rec["wall_s"] = status_of(rec), time.perf_counter() - start
            raise CudaLostError(rec) from e

    inner = Env(**{**env.__dict__, "stage": note_stage})
    try:
        fd, make, xs, refs = build(rec, path, text, fd0, xs0, scale, inner)
    except UnscalableError as e:
        rec["status"] = "skipped" if "over the cap" in str(e) else "unscalable"
        rec["detail"], rec["wall_s"] = str(e), time.perf_counter() - start
        return rec
    except Exception as e:  # noqa: BLE001 - the file's own size fails in the reference
        failed(e, rec)
        rec["status"], rec["wall_s"] = status_of(rec), time.perf_counter() - start
        return rec
    rec["shapes"] = [[str(x.dtype).replace("torch.", ""), list(x.shape)] for x in xs if isinstance(x, torch.Tensor)]
    in_bytes = sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))
    sets = [xs]
    # Set 0 drawn again: a run may have written aliased outputs into the first.
    spreads = rounding_spreads(fd.fusion, lambda: make(0))
    try:
        note_stage("input sets")
        sets += [make(k) for k in range(1, input_sets_needed(in_bytes, env.l2_bytes) if env.timing else 1)]
        rec["input_sets"] = len(sets)
        engine_part(rec, fd, sets, refs, inner, spreads)
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        failed(e, rec)
    if env.nvf is not None:
        # The engine's figures are kept should nvFuser take the process down.
        env.checkpoint(dict(rec, status=status_of(rec), partial=True, wall_s=time.perf_counter() - start))
        try:
            nvfuser_part(rec, fd, sets, refs, lambda: make(0), inner, spreads)
        except Exception as e:  # noqa: BLE001
            failed(e, rec.setdefault("nvfuser", {}))
    run_ms = rec.get("engine_run", {}).get("median_ms")
    nvf_ms = rec.get("nvfuser", {}).get("time", {}).get("median_ms")
    if run_ms and nvf_ms:
        rec["ratio"] = run_ms / nvf_ms
    rec["status"], rec["wall_s"] = status_of(rec), time.perf_counter() - start
    return rec
