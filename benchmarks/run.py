"""Benchmark harness (issue 8): the engine's compiled fusions against torch eager, torch.compile
and nvFuser on the GPU, in one process, per benchmark fusion of benchmarks/fusions.py.

Per fusion: build the definition, evaluate the reference (engine.reference.evaluate, on the
GPU), compile with the engine (timed: define + compile_fusion, then kernel loads with NVRTC,
then a second define + compile + load from the cubin cache), check the engine's outputs
against the reference once, then time with CUDA events (warm-up, median, rotating input sets
where the inputs fit in L2):
  engine run      CompiledFusion.run(xs, backend="cuda"), end to end, as a user calls it
  engine kernels  sum of cf.profile's per-kernel medians
  eager (ref)     engine.reference.evaluate of the same definition (torch op by op)
  eager (torch)   a hand-written torch function (benchmarks/fusions.py)
  compile / mat   torch.compile of that function, mode default / max-autotune-no-cudagraphs
  engine beside   engine run again, in alternating rounds with torch.compile's two modes once
                  both are compiled (the median of the rounds): the ratios with torch.compile
                  use it, so all three are timed in the GPU's same state
  nvFuser         nvfuser_direct, the same definition replayed on its frontend (benchmarks/nvf.py)
Writes bench.json and bench.md under --out and prints the markdown table last.

    PYTHONPATH=. python benchmarks/run.py [--only NAME ...] [--out DIR] [--budget-s S]
    PYTHONPATH=. python benchmarks/run.py --smoke   # CPU: small sizes, emulated kernels, wall clock

A run that dies (a crash in a peer, a poisoned CUDA context) can be started again with
--resume: finished fusions are read back, and the stage that was running is skipped with
the reason. benchmarks/device.sh does that in a loop on the device machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.fusions import BenchFusion, benchmark_fusions  # noqa: E402
from benchmarks.report import compare, derive, error_text, format_report, minimal_bytes  # noqa: E402
from benchmarks.timing import copy_bandwidth_gbps, input_sets_needed, time_calls  # noqa: E402

T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


def short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


class Harness:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.device = "cpu" if args.smoke else "cuda"
        self.backend = "emulate" if args.smoke else "cuda"
        self.deadline = args.deadline or (time.time() + args.budget_s if args.budget_s else None)
        self.rows: list[dict[str, Any]] = []
        self.meta: dict[str, Any] = {}
        self.crashed: dict[str, str] = {}  # fusion -> stage that crashed a previous attempt
        self.nvf: Any = None

    # ---- bookkeeping -----------------------------------------------------------------------------
    @property
    def partial_path(self) -> Path:
        return self.out / "bench.partial.json"

    @property
    def progress_path(self) -> Path:
        return self.out / "progress.json"

    def time_left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.time()

    def stage(self, fusion: str, stage: str, phase: str = "") -> None:
        self.progress_path.write_text(json.dumps({"fusion": fusion, "stage": stage, "phase": phase}))

    def save_partial(self) -> None:
        self.partial_path.write_text(json.dumps({"meta": self.meta, "rows": self.rows}, indent=1, default=str))

    def resume(self) -> None:
        if self.partial_path.exists():
            data = json.loads(self.partial_path.read_text())
            self.rows = data.get("rows", [])
            self.meta.update(data.get("meta", {}))
        if self.progress_path.exists():
            p = json.loads(self.progress_path.read_text())
            done = {r["name"] for r in self.rows if p.get("phase") in r.get("phases_done", [])}
            if p.get("fusion") and p["fusion"] not in done:
                self.crashed[p["fusion"]] = p.get("stage", "?")
                log(f"resuming: {p['fusion']} crashed the process in stage {p.get('stage')}; that stage is skipped")

    def cuda_alive(self) -> bool:
        if self.device != "cuda":
            return True
        try:
            torch.cuda.synchronize()
            return True
        except Exception as e:
            log(f"the CUDA context is broken ({short(e)}); exiting so a fresh process can go on")
            return False

    # ---- setup -----------------------------------------------------------------------------------
    def setup(self) -> None:
        m = self.meta
        m.setdefault("started", time.strftime("%Y-%m-%d %H:%M:%S"))
        m["torch"] = torch.__version__
        try:
            import triton

            m["triton"] = triton.__version__
        except Exception:
            m["triton"] = "absent"
        if self.device == "cuda":
            props = torch.cuda.get_device_properties(0)
            m["device"] = torch.cuda.get_device_name(0)
            m["sms"] = props.multi_processor_count
            m["l2_bytes"] = getattr(props, "L2_cache_size", 50 << 20)
            if "copy_gbps" not in m:
                m["copy_gbps"] = copy_bandwidth_gbps()
            log(f"{m['device']}: copy bandwidth {m['copy_gbps']:.0f} GB/s, L2 {m['l2_bytes'] >> 20} MiB")
        else:
            m["device"] = "CPU (smoke run: emulated kernels, wall-clock times)"
            m["l2_bytes"] = 32 << 20
            m["copy_gbps"] = None
        if self.args.no_nvfuser or self.device != "cuda":
            m["nvfuser"] = "not asked for" if self.args.no_nvfuser else "not on the CPU"
        else:
            from benchmarks.nvf import import_nvfuser

            self.nvf, m["nvfuser"] = import_nvfuser()
            log(f"nvFuser: {m['nvfuser']}")
        if self.device == "cuda":
            self.warm_up_engine()

    def warm_up_engine(self) -> None:
        """Compile and run a tiny fusion so imports, cupy and NVRTC start-up stay out of the first
        benchmark's compile time."""
        from benchmarks.fusions import BF16, rms_norm
        from engine.compile import compile_fusion

        try:
            fd = rms_norm(BF16, 8, 128)
            xs = [torch.randn(8, 128, device="cuda").bfloat16(), torch.randn(128, device="cuda").bfloat16()]
            compile_fusion(fd, xs).run(xs, backend="cuda")
            torch.cuda.synchronize()
        except Exception as e:
            log(f"engine warm-up failed: {short(e)}")

    # ---- one fusion --------------------------------------------------------------------------------
    def bench(self, bf: BenchFusion, phase: str, row: dict[str, Any]) -> dict[str, Any]:
        """Phase "core": the engine, eager and nvFuser; phase "compile": torch.compile (both modes)."""
        from engine.reference import evaluate

        for k in ("times_ms", "timing", "skipped", "peer_checks", "first_call_s"):
            row.setdefault(k, {})
        row.update(name=bf.name, shape=bf.shape, sample=bf.sample)
        crashed = self.crashed.get(bf.name)
        dev = self.device
        xs0 = bf.make_inputs(dev, 0)
        in_bytes = minimal_bytes(xs0, [])
        nsets = input_sets_needed(in_bytes, self.meta["l2_bytes"])
        sets = [xs0] + [bf.make_inputs(dev, k) for k in range(1, nsets)]
        row["input_sets"] = nsets
        fd = bf.build()
        refs = as_list(evaluate(fd.fusion, xs0))
        row["bytes_min"] = minimal_bytes(xs0, refs)
        row["bytes_in"] = in_bytes

        def timed(key: str, fn: Any, queue_full: bool = self.args.queue_full) -> None:
            r = time_calls(fn, sets, device=dev, target_ms=self.args.target_ms)
            row["times_ms"][key] = r["median_ms"]
            row["timing"][key] = r
            if queue_full and dev == "cuda":
                q = time_calls(fn, sets, device=dev, target_ms=self.args.target_ms, queue_full=True)
                row["timing"][key + "_queue_full"] = q
            log(f"  {key:16s} {r['median_ms'] * 1e3:10.1f} us  (reps {r['reps']}, sets {r['sets']})")

        def run_stage(key: str, fn: Any) -> bool:
            if crashed == key:
                row["skipped"][key] = "crashed the process in a previous attempt"
                return False
            self.stage(bf.name, key, phase)
            if os.environ.get("FUSESCOPE_BENCH_CRASH") == f"{bf.name}:{key}":  # tests the --resume path
                os._exit(9)
            try:
                fn()
                return True
            except Exception as e:
                row["skipped"].setdefault(key, short(e))
                log(f"  {key}: FAILED {short(e)}")
                if self.args.verbose:
                    traceback.print_exc()
                if not self.cuda_alive():
                    self.save_partial()
                    os._exit(3)
                return False

        # engine ------------------------------------------------------------------------------
        def engine() -> None:
            from engine.compile import compile_fusion

            sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
            row["engine_stage"] = "compile"
            # The garbage of earlier fusions' runs (eager, nvFuser) is collected before the
            # clock starts, so a full collection it triggers is not charged to this compile.
            gc.collect()
            t = time.perf_counter()
            fd1 = bf.build()
            t_def = time.perf_counter() - t
            cf = compile_fusion(fd1, xs0)
            sync()
            row["compile_ms"] = (time.perf_counter() - t) * 1e3
            row["define_ms"] = t_def * 1e3
            row["segments"] = len(cf.segments)
            row["kernels"] = sum(1 for s in cf.segments if s.is_kernel)
            row["schedulers"] = [s.scheduler for s in cf.segments]
            row["engine_stage"] = "kernel load"
            t = time.perf_counter()
            ks = [s.kernel(self.backend) for s in cf.segments if s.is_kernel]
            row["first_load_ms"] = (time.perf_counter() - t) * 1e3
            row["nvrtc_s"] = sum(getattr(k, "compile_time_s", 0.0) or 0.0 for k in ks
                                 if not getattr(k, "cached", False))
            row["engine_stage"] = "second compile"
            gc.collect()
            t = time.perf_counter()
            fd2 = bf.build()
            cf2 = compile_fusion(fd2, xs0)
            ks2 = [s.kernel(self.backend) for s in cf2.segments if s.is_kernel]
            sync()
            row["recompile_ms"] = (time.perf_counter() - t) * 1e3
            # A fusion-cache hit reuses the first compile's segments (and their loaded kernels,
            # which NVRTC built); otherwise each kernel must come from the cubin cache.
            row["recompile_fusion_cache"] = cf2.segments is cf.segments
            row["recompile_cached"] = (row["recompile_fusion_cache"]
                                       or all(getattr(k, "cached", True) for k in ks2))
            log(f"  engine compile {row['compile_ms']:.0f} ms (define {t_def * 1e3:.0f}), kernels "
                f"{row['kernels']}/{row['segments']} segments, NVRTC {row['nvrtc_s']:.2f} s, "
                f"2nd compile {row['recompile_ms']:.0f} ms cached={row['recompile_cached']}")
            row["engine_stage"] = "run"
            outs = as_list(cf2.run(xs0, backend=self.backend))
            row["engine_check"] = compare(outs, refs)
            log(f"  engine vs reference: {error_text(row['engine_check'])} {row['engine_check'].get('error', '')}")
            del outs
            row["engine_stage"] = "timing"
            timed("engine_run", lambda x: cf2.run(x, backend=self.backend))
            row["engine_stage"] = "profile"
            profs = cf2.profile(xs0, backend=self.backend)
            row["times_ms"]["engine_kernels"] = sum(p.time_ms for p in profs)
            row["kernel_profiles"] = [{
                "name": p.name, "time_ms": p.time_ms, "gbps": p.gbps, "bytes": p.bytes_total,
                "grid": list(p.launch.grid) if p.launch else None,
                "block": list(p.launch.block) if p.launch else None,
                "registers": p.registers, "smem_static": p.static_shared_bytes,
                "smem_dynamic": p.launch.shared_mem_bytes if p.launch else None,
                "local_bytes": p.local_bytes, "occupancy": p.occupancy,
            } for p in profs]
            for s, p in zip([s for s in cf2.segments if s.is_kernel], profs):
                g = f"{p.gbps:.0f} GB/s" if p.gbps else ""
                log(f"    kernel {s.scheduler:22s} {p.time_ms * 1e3:9.1f} us {g:>10s} grid={p.launch.grid} "
                    f"block={p.launch.block} regs={p.registers} occ={p.occupancy}")
            row["engine_stage"] = "repeated compiles"
            row["compile_ms_runs"] = repeated_compiles(bf, xs0, self.args.compile_repeats)
            if row["compile_ms_runs"]:
                row["compile_ms_median"] = statistics.median(row["compile_ms_runs"])
                log(f"  engine compile again x{len(row['compile_ms_runs'])}: median "
                    f"{row['compile_ms_median']:.0f} ms {[round(t) for t in row['compile_ms_runs']]}")
            row.pop("engine_stage", None)

        if phase == "core":
            if not run_stage("engine", engine):
                row["engine_error"] = f"{row.get('engine_stage', '?')}: {row['skipped'].get('engine')}"
            gc.collect()
            # eager -------------------------------------------------------------------------------
            run_stage("eager_ref", lambda: timed("eager_ref", lambda x: evaluate(fd.fusion, x)))

        def eager_torch() -> None:
            row["peer_checks"]["eager_torch"] = compare(as_list(bf.torch_fn(*xs0)), refs)
            timed("eager_torch", lambda x: bf.torch_fn(*x))

        if bf.torch_fn is not None and phase == "core":
            run_stage("eager_torch", eager_torch)

        # nvFuser ---------------------------------------------------------------------------------
        def nvfuser() -> None:
            from benchmarks.nvf import mirror

            nfd = mirror(fd, self.nvf)
            t = time.perf_counter()
            outs = as_list(nfd.execute(xs0))
            torch.cuda.synchronize()
            row["first_call_s"]["nvfuser"] = time.perf_counter() - t
            row["peer_checks"]["nvfuser"] = compare(outs, refs)
            del outs
            timed("nvfuser", lambda x: nfd.execute(x))

        if phase == "core":
            if self.nvf is not None:
                run_stage("nvfuser", nvfuser)
            else:
                row["skipped"]["nvfuser"] = self.meta.get("nvfuser", "not run")
            return row

        # torch.compile, with the engine timed again beside it ------------------------------------
        # Everything is compiled first, then the engine and both modes are timed in alternating
        # rounds: the GPU's state drifts over the seconds a max-autotune compile takes (the same
        # engine kernel measured 0.5-1% apart before and after it), more than the margins here.
        beside: list[tuple[str, Any]] = []

        def engine_late() -> None:
            from engine.compile import compile_fusion

            cf = compile_fusion(bf.build(), xs0)  # a fusion-cache hit unless the process restarted
            beside.append(("engine_run_late", lambda x: cf.run(x, backend=self.backend)))

        if bf.torch_fn is not None and not self.args.no_compile:
            run_stage("engine_run_late", engine_late)
            torch._dynamo.reset()  # the earlier fusions' compiled code
        for key, mode in (("compile_default", None), ("compile_mat", "max-autotune-no-cudagraphs")):
            if bf.torch_fn is None or self.args.no_compile:
                row["skipped"][key] = "not asked for" if self.args.no_compile else "no torch function"
                continue
            if key == "compile_mat" and self.args.no_max_autotune:
                row["skipped"][key] = "not asked for"
                continue
            if key == "compile_mat" and self.time_left() < self.args.mat_reserve_s:
                row["skipped"][key] = f"time budget ({self.time_left():.0f} s left)"
                continue

            def compiled(key: str = key, mode: str | None = mode) -> None:
                fn = torch.compile(own_code(bf.torch_fn), mode=mode, dynamic=False)
                t = time.perf_counter()
                outs = as_list(fn(*xs0))
                if dev == "cuda":
                    torch.cuda.synchronize()
                row["first_call_s"][key] = time.perf_counter() - t
                row["peer_checks"][key] = compare(outs, refs)
                del outs
                log(f"  {key}: compiled in {row['first_call_s'][key]:.1f} s")
                beside.append((key, lambda x: fn(*x)))

            run_stage(key, compiled)
        rounds = max(1, self.args.rounds)
        per: dict[str, list[dict[str, Any]]] = {k: [] for k, _ in beside}
        for _ in range(rounds):
            for key, fn in beside:
                if key in row["skipped"]:
                    continue
                run_stage(key, lambda key=key, fn=fn: per[key].append(
                    time_calls(fn, sets, device=dev, target_ms=self.args.target_ms / rounds)))
        for key, rs in per.items():
            if len(rs) == rounds:
                med = statistics.median(r["median_ms"] for r in rs)
                row["times_ms"][key] = med
                row["timing"][key] = {"median_ms": med, "rounds_ms": [r["median_ms"] for r in rs],
                                      "reps": sum(r["reps"] for r in rs), "sets": rs[0]["sets"]}
                log(f"  {key:16s} {med * 1e3:10.1f} us  (median of {rounds} alternating rounds: "
                    f"{[round(r['median_ms'] * 1e3, 1) for r in rs]})")
                if self.args.queue_full and dev == "cuda":
                    fn = dict(beside)[key]
                    row["timing"][key + "_queue_full"] = time_calls(fn, sets, device=dev, target_ms=self.args.target_ms,
                                                                    queue_full=True)
        return row

    def run(self, fusions: list[BenchFusion]) -> None:
        """Every fusion's core phase first (engine, eager, nvFuser), then torch.compile's, so the
        time budget cuts the slow peer compiles before it cuts any engine row."""
        by_name = {r["name"]: r for r in self.rows}
        for phase in ("core", "compile"):
            for bf in fusions:
                row = by_name.get(bf.name)
                if row is None:
                    row = by_name[bf.name] = {"name": bf.name, "shape": bf.shape, "times_ms": {}, "skipped": {}}
                    self.rows.append(row)
                if phase in row.get("phases_done", []):
                    continue
                if self.time_left() < self.args.fusion_reserve_s:
                    row.setdefault("skipped", {})[phase] = f"time budget ({self.time_left():.0f} s left)"
                    log(f"{bf.name}: phase {phase} skipped, time budget")
                    row.setdefault("phases_done", []).append(phase)
                    continue
                log(f"{bf.name} {bf.shape} [{phase}] (sample {bf.sample})")
                self.stage(bf.name, "setup", phase)
                try:
                    self.bench(bf, phase, row)
                except Exception as e:  # setup of the fusion itself (inputs, reference)
                    log(f"{bf.name}: FAILED {short(e)}")
                    if self.args.verbose:
                        traceback.print_exc()
                    row.setdefault("skipped", {})[phase] = short(e)
                    if not self.cuda_alive():
                        row.setdefault("phases_done", []).append(phase)
                        self.save_partial()
                        os._exit(3)
                row.setdefault("phases_done", []).append(phase)
                derive(row, self.meta.get("copy_gbps"))
                self.save_partial()
                gc.collect()
                if self.device == "cuda":
                    torch.cuda.empty_cache()
        self.progress_path.unlink(missing_ok=True)

    def finish(self) -> str:
        rows = [derive(r, self.meta.get("copy_gbps")) for r in self.rows]
        self.meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        (self.out / "bench.json").write_text(json.dumps({"meta": self.meta, "rows": rows}, indent=1, default=str))
        text = format_report(rows, self.meta)
        (self.out / "bench.md").write_text(text + "\n")
        return text


def own_code(fn: Any) -> Any:
    """`fn` as a function with its own code object: dynamo keeps its compiled code per code
    object, so each torch.compile mode of the same torch function compiles and keeps its own
    (both are called in turn in the timing rounds)."""
    if not isinstance(fn, types.FunctionType):
        return fn
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def repeated_compiles(bf: BenchFusion, xs: list[Any], n: int) -> list[float]:
    """`n` more compiles of the fusion from scratch (define + compile_fusion, the fusion cache
    cleared first, garbage collected before each): the first compile of a process is one
    sample of a host whose speed moves between calls (RoPE: 152-264 ms across machine starts,
    161 against 239 ms for two sizes in one process)."""
    from engine import fusion_cache
    from engine.compile import compile_fusion

    times = []
    for _ in range(n):
        fusion_cache.clear()
        gc.collect()
        t = time.perf_counter()
        compile_fusion(bf.build(), xs)
        times.append((time.perf_counter() - t) * 1e3)
    return times


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="fusion names (default: all)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/fusescope-bench",
                    help="folder for bench.json / bench.md ($OUT on the device machine)")
    ap.add_argument("--smoke", action="store_true", help="CPU: small sizes, emulated kernels, wall clock")
    ap.add_argument("--scale", choices=("full", "small"), default=None, help="sizes (default full; small with --smoke)")
    ap.add_argument("--no-nvfuser", action="store_true")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-max-autotune", action="store_true")
    ap.add_argument("--budget-s", type=float, default=None, help="stop starting work after this many seconds")
    ap.add_argument("--deadline", type=float, default=None, help="the same as an epoch time (shared by resumes)")
    ap.add_argument("--mat-reserve-s", type=float, default=45.0, help="skip max-autotune with less time left")
    ap.add_argument("--fusion-reserve-s", type=float, default=20.0, help="skip a fusion with less time left")
    ap.add_argument("--compile-repeats", type=int, default=5,
                    help="fresh compiles after the first, for the compile time's median (0: none)")
    ap.add_argument("--target-ms", type=float, default=200.0, help="timed work per measurement")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds of the engine and torch.compile's modes (their target-ms shared)")
    ap.add_argument("--queue-full", action="store_true",
                    help="also time each with the queue filled first (device time without host gaps)")
    ap.add_argument("--resume", action="store_true", help="go on from --out's partial results")
    ap.add_argument("--report-only", action="store_true", help="write and print the report of --out's partial results")
    ap.add_argument("--verbose", action="store_true")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    if not args.smoke and not args.report_only and not torch.cuda.is_available():
        print("benchmarks/run.py needs a CUDA GPU (or --smoke for a CPU dry run)", file=sys.stderr)
        return 2
    h = Harness(args)
    if args.resume or args.report_only:
        h.resume()
    if args.report_only:
        print(h.finish(), flush=True)
        return 0
    h.setup()
    fusions = benchmark_fusions(args.scale or ("small" if args.smoke else "full"))
    if args.only:
        unknown = set(args.only) - {f.name for f in fusions}
        if unknown:
            print(f"unknown fusion(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        fusions = [f for f in fusions if f.name in args.only]
    if args.smoke:
        args.no_nvfuser = True
    h.run(fusions)
    text = h.finish()
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
