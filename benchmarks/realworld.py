"""GPU real-size sweep: every real-world script expected to work (tests/realworld WORKS), the
regression fusions and the bundled samples, at the sizes of the models they come from, run by
the engine and by nvFuser on the same CUDA inputs in one process.

A script whose header has a `# real-sizes: 64=8192 24=16384` line runs at those sizes; one
without runs at its own size and at size_sweep's model scale (largest dim 4096); one with a
hand-written schedule (or scatter) at its own size only, as in the GPU tests
(scripts/scales.py's rescalable). Per case
(benchmarks/realworld_case.py): compile seconds, outputs against the reference, cf.run and
fd.execute per call, kernels per call, per kernel its time, registers, local memory and
occupancy, and nvFuser's time and kernel count. Records go to OUT/realworld[-shardIofN].jsonl
as they are made; the report (benchmarks/realworld_report.py) merges such files.

    PYTHONPATH=. python benchmarks/realworld.py [--only SUBSTR ...] [--shard I/N] [--deadline EPOCH]
    PYTHONPATH=. python benchmarks/realworld.py --backend emulate --only softmax   # CPU dry run
    PYTHONPATH=. python benchmarks/realworld.py --report-only DIR_OR_JSONL ... --report-name realworld-run1

A CUDA fault kills the context, so the process ends (exit 3) after writing the case's record;
a case running past --case-timeout ends it too (exit 124). --resume goes on from OUT's records:
a case whose process died without a record (its progress file is left behind) is recorded as
crashed, or as a timeout where REALWORLD_LAST_RC is 124 or 137, and skipped; where nvFuser took
the process down, the engine's figures (written before nvFuser's part) are kept with nvFuser's
error. benchmarks/realworld.sh does that in a loop, one process per GPU.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.realworld_case import (  # noqa: E402
    SIZES,
    CudaLostError,
    Env,
    cuda_alive,
    launched_kernels,
    plan_sizes,
    run_case,
)
from benchmarks.realworld_report import write_report  # noqa: E402

T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


def corpus() -> list[tuple[str, Path]]:
    """(name, path) of every fusion file the sweep knows, in a fixed order."""
    from tests.realworld.test_realworld import SCRIPTS, WORKS

    out = [(f"realworld/{n}", SCRIPTS / f"{n}.py") for n in WORKS]
    out += [(f"regression/{p.stem}", p) for p in sorted((ROOT / "tests" / "regressions" / "fusions").glob("*.py"))
            if "# expect refused:" not in p.read_text()]
    from tests.multidevice.samples import single_device

    # The multi-device samples run on several ranks (tests/multidevice), not in this sweep.
    out += [(f"sample/{p.stem}", p) for p in single_device(sorted((ROOT / "sample_fusions").glob("*.py")))]
    return out


def parse_shard(text: str) -> tuple[int, int]:
    i, _, n = text.partition("/")
    if not (i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        raise argparse.ArgumentTypeError(f"--shard wants I/N with 1 <= I <= N, got {text!r}")
    return int(i), int(n)


def select(scripts: list[tuple[str, Path]], only: list[str] | None,
           shard: tuple[int, int]) -> list[tuple[str, Path]]:
    """The scripts whose names hold one of `only` (one ending in `$` must end the name), then
    every N-th from the I-th (shards take turns, so slow and fast scripts spread over them)."""
    if only:
        scripts = [s for s in scripts
                   if any(s[0].endswith(o[:-1]) if o.endswith("$") else o in s[0] for o in only)]
    i, n = shard
    return [s for k, s in enumerate(scripts) if k % n == i - 1]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The case records of a JSON-lines file (none where it does not exist; a line cut short
    by a killed process is left out)."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "key" in rec:
            out.append(rec)
    return out


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "?"
    except Exception:  # noqa: BLE001 - a copy of the tree without git
        return "?"


class Sweep:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        i, n = args.shard
        suffix = f"-shard{i}of{n}" if n > 1 else ""
        self.records_path = self.out / f"realworld{suffix}.jsonl"
        self.progress_path = self.out / f"progress{suffix}.json"
        self.deadline = args.deadline if args.deadline is not None else (
            T0 + args.budget_s if args.budget_s else None)
        self.done: set[str] = set()
        self.current: str | None = None

    def time_left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.time()

    def write(self, rec: dict[str, Any]) -> None:
        with self.records_path.open("a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if "key" in rec:
            self.done.add(rec["key"])

    def stage(self, stage: str) -> None:
        self.progress_path.write_text(json.dumps({"key": self.current, "stage": stage, "pid": os.getpid()}))

    def resume(self, scripts: list[tuple[str, Path]]) -> None:
        """Read back this shard's records, and the --prior records of `scripts` (copied in);
        record the case a dead process left in flight: a case of its own, or nvFuser's part of
        a case whose engine figures were written first (a partial record)."""
        if not self.args.resume:
            self.records_path.unlink(missing_ok=True)
        latest = {rec["key"]: rec for rec in read_records(self.records_path)}
        names = {n for n, _ in scripts}
        for p in self.args.prior:
            for f in sorted(p.glob("realworld*.jsonl")) if p.is_dir() else [p]:
                for rec in read_records(f):
                    if rec["key"] not in latest and rec.get("script") in names:
                        self.write(rec)
                        latest[rec["key"]] = rec
        self.done = set(latest)
        if not self.progress_path.exists():
            return
        p = json.loads(self.progress_path.read_text())
        key, stage = p.get("key"), p.get("stage")
        if key and self.args.resume and (key not in latest or latest[key].get("partial")):
            rc = os.environ.get("REALWORLD_LAST_RC", "?")
            killed = rc in ("124", "137")
            how = "was killed after running past its time limit" if killed else "died"
            detail = f"the process {how} in stage {stage} (exit status {rc})"
            if key in latest:
                rec = {k: v for k, v in latest[key].items() if k != "partial"}
                rec.setdefault("nvfuser", {}).update(stage=stage, error=detail)
                self.write(rec)
            else:
                script, _, size = key.rpartition("@")
                self.write({"key": key, "script": script, "size": size, "label": size, "stage": stage,
                            "status": "timeout" if killed else "crashed", "detail": detail})
            log(f"resuming: {key}: {detail}; skipped")
        self.progress_path.unlink()

    def env(self) -> Env:
        a = self.args
        cuda = a.backend == "cuda"
        meta = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "shard": f"{a.shard[0]}/{a.shard[1]}",
                "torch": torch.__version__, "commit": commit(), "backend": a.backend, "time_s": a.time_s}
        nvf = None
        if cuda:
            meta["device"] = torch.cuda.get_device_name(0)
            l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
            if a.no_nvfuser:
                meta["nvfuser"] = "not asked for"
            else:
                from benchmarks.nvf import import_nvfuser

                nvf, meta["nvfuser"] = import_nvfuser()
        else:
            meta["device"], meta["nvfuser"], l2 = "CPU (emulated kernels, no timing)", "not on the CPU", 0
        self.write({"meta": meta})
        log(f"{meta['device']}, {meta['nvfuser']}, engine {meta['commit']}")
        env = Env(device="cuda" if cuda else "cpu", backend=a.backend, timing=cuda, nvf=nvf, l2_bytes=l2,
                  time_s=a.time_s, cap=a.cap, reduced_elems=a.reduced_elems, stage=self.stage,
                  checkpoint=self.write)
        if cuda:
            warm_up(env)
        return env

    def run(self, scripts: list[tuple[str, Path]], env: Env) -> int:
        from engine import fusion_cache, loads_fusion

        a = self.args
        sizes = a.sizes or (["own", "real", "model"] if a.backend == "cuda" else ["own"])
        left = len(scripts)
        for name, path in scripts:
            if self.time_left() < a.reserve_s:
                log(f"deadline: {left} script(s) left for a --resume")
                return 0
            left -= 1
            text = path.read_text()
            try:
                fd0 = loads_fusion(text, filename=str(path))
                xs0 = fd0.example_inputs(device="cpu", seed=0)
                plan = plan_sizes(text, xs0, sizes, a.own_size, a.reduced_elems, path.stem)
            except Exception as e:  # noqa: BLE001 - a file that does not open is a finding
                if f"{name}@load" not in self.done:
                    self.write({"key": f"{name}@load", "script": name, "file": str(path), "size": "load",
                                "label": "load", "status": "load-error",
                                "error": f"{type(e).__name__}: {str(e).strip()[:500]}"})
                    log(f"{name}: does not load: {e}")
                continue
            for size, scale in plan:
                key = f"{name}@{size}"
                if key in self.done:
                    continue
                if self.time_left() < a.reserve_s:
                    log(f"deadline: stopping before {key}")
                    return 0
                self.current = key
                self.stage("start")
                if os.environ.get("FUSESCOPE_REALWORLD_CRASH") == key:  # tests the --resume path
                    os._exit(9)
                # A hung kernel or a runaway compile ends the process (the progress file names
                # the case) rather than the shard's whole budget.
                watchdog = threading.Timer(a.case_timeout, overrun, (key, a.case_timeout))
                watchdog.daemon = True
                watchdog.start()
                try:
                    rec = run_case(name, path, text, fd0, xs0, size, scale, env)
                except CudaLostError as e:
                    self.write(e.args[0])
                    self.progress_path.unlink(missing_ok=True)
                    log(f"{key}: the CUDA context is lost ({e.args[0].get('error')}); exiting for a --resume")
                    return 3
                except Exception as e:  # noqa: BLE001 - the harness's own failure: recorded, the sweep goes on
                    rec = {"key": key, "script": name, "file": str(path), "size": size, "label": size,
                           "status": "error", "stage": "harness",
                           "error": "".join(traceback.format_exception_only(e)).strip()[:500]}
                    if not cuda_alive(env.device):
                        self.write(rec)
                        self.progress_path.unlink(missing_ok=True)
                        return 3
                finally:
                    watchdog.cancel()
                self.write(rec)
                self.progress_path.unlink(missing_ok=True)
                log(describe(rec))
                fusion_cache.clear()
                gc.collect()
                if env.device == "cuda":
                    torch.cuda.empty_cache()
        return 0


def overrun(key: str, seconds: float) -> None:
    log(f"{key}: still running after {seconds:g} s; ending the process (exit status 124)")
    os._exit(124)


def describe(rec: dict[str, Any]) -> str:
    """One log line per case."""
    run = rec.get("engine_run", {}).get("median_ms")
    nv = rec.get("nvfuser", {})
    nvt = nv.get("time", {}).get("median_ms")
    parts = [f"{rec['key']} [{rec.get('label')}] {rec.get('status')}",
             f"compile {rec['compile_s']:.2f}s" if rec.get("compile_s") is not None else "",
             f"err {rec['max_abs_err']:.2e}" if rec.get("max_abs_err") is not None else "",
             f"kernels {rec.get('engine_kernels')}/{nv.get('kernels', '-')}" if "engine_kernels" in rec else "",
             f"engine {run * 1e3:.1f} us" if run else "", f"nvFuser {nvt * 1e3:.1f} us" if nvt else "",
             f"ratio {rec['ratio']:.2f}" if rec.get("ratio") else "",
             f"({rec.get('stage')}: {rec['error']})" if rec.get("error") else rec.get("detail", ""),
             f"nvFuser {nv.get('stage')}: {nv['error']}" if nv.get("error") else ""]
    return " ".join(p for p in parts if p)


def warm_up(env: Env) -> None:
    """A tiny fusion through the engine and nvFuser first, so their start-up (cupy, NVRTC,
    nvFuser's first compile) stays out of the first case's figures."""
    from benchmarks.fusions import BF16, rms_norm
    from engine import compile_fusion

    fd = rms_norm(BF16, 8, 128)
    xs = [torch.randn(8, 128, device="cuda").bfloat16(), torch.randn(128, device="cuda").bfloat16()]
    try:
        cf = compile_fusion(fd, xs)
        cf.run(xs, backend="cuda")
        if env.nvf is not None:
            from benchmarks.nvf import mirror

            mirror(fd, env.nvf).execute(xs)
        torch.cuda.synchronize()
        counted = launched_kernels(lambda: cf.run(xs, backend="cuda"))  # CUPTI's start-up
        log(f"warm-up: torch.profiler counts {counted['count']} kernel(s) of the engine's rms_norm")
    except Exception as e:  # noqa: BLE001
        log(f"warm-up failed: {type(e).__name__}: {e}")


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="substrings of the script names to sweep (NAME$: names ending so)")
    ap.add_argument("--files", nargs="*", type=Path, default=None, help="sweep these fusion files instead")
    ap.add_argument("--shard", type=parse_shard, default=(1, 1), help="I/N: every N-th script from the I-th")
    ap.add_argument("--sizes", nargs="*", choices=SIZES, default=None,
                    help="sizes to run (default: own, real, model on cuda; own on emulate)")
    ap.add_argument("--own-size", action="store_true", help="also a script's own size where it has real sizes")
    ap.add_argument("--backend", choices=("cuda", "emulate"), default="cuda",
                    help="emulate: the same path on the CPU (g++ emulator), no nvFuser, no timing")
    ap.add_argument("--no-nvfuser", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "/tmp/fusescope-realworld"))
    ap.add_argument("--resume", action="store_true", help="go on from OUT's records of this shard")
    ap.add_argument("--prior", nargs="*", type=Path, default=[],
                    help="JSON-lines files (or folders of them) of an earlier call: their cases of the "
                         "scripts swept here count as done (copied in)")
    ap.add_argument("--deadline", type=float, default=None, help="epoch seconds: start nothing after it")
    ap.add_argument("--budget-s", type=float, default=None, help="the same, counted from now")
    ap.add_argument("--reserve-s", type=float, default=30.0, help="start no case with less time left")
    ap.add_argument("--case-timeout", type=float, default=180.0,
                    help="end the process when one case runs this long (recorded as a timeout on --resume)")
    ap.add_argument("--time-s", type=float, default=1.0, help="timing budget per timed function and case")
    ap.add_argument("--cap", type=int, default=1 << 31, help="most elements of one input tensor")
    ap.add_argument("--reduced-elems", type=int, default=16 << 20, help="the reduced size's bound")
    ap.add_argument("--report-only", nargs="*", type=Path, default=None,
                    help="merge these JSON-lines files or folders (default OUT) into the report")
    ap.add_argument("--report-name", default="realworld", help="the report's file name, without .md/.json")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    a = parse(argv)
    names = None if (a.only or a.files) else [n for n, _ in corpus()]
    if a.report_only is not None:
        print(write_report(a.report_only or [a.out], a.out, a.report_name, names), end="", flush=True)
        return 0
    if a.backend == "cuda" and not torch.cuda.is_available():
        print("benchmarks/realworld.py needs a CUDA GPU (or --backend emulate)", file=sys.stderr)
        return 2
    scripts = [(f"file/{p.stem}", p) for p in a.files] if a.files else corpus()
    scripts = select(scripts, a.only, a.shard)
    sweep = Sweep(a)
    sweep.resume(scripts)
    if sweep.time_left() < a.reserve_s:
        log("no time left: nothing started")
        return 0
    rc = sweep.run(scripts, sweep.env())
    if rc == 0:
        text = write_report([sweep.records_path], a.out, sweep.records_path.stem, None)
        print(text.split("## Cases")[0], end="", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
