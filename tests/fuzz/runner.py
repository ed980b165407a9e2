"""Run fuzz cases in child processes, so a crash of native code names its case.

Each child (`python -m tests.fuzz.runner worker ...`) runs a range of case indices and
prints a START line before each case and a RESULT line (JSON) after it. When a child dies
(an emulated kernel's fault that the emulator cannot catch, an abort), the parent records
the started case as a crash and starts a new child after it. Case i of a run is the
generator driven by RandomChooser(f"{mode}-{seed}-{i}"), so any case is rebuilt from
(mode, seed, i) alone; `shrink` and `save` rebuild one, simplify it and write it as a
fusion file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.fuzz.choices import RandomChooser, ReplayChooser
from tests.fuzz.harness import REFUSALS, Outcome, category, crash, run_compiled

REPO = Path(__file__).resolve().parents[2]
TAG = "@@fuzz "
MODES = ("fusion", "schedule")


def case_key(mode: str, seed: int, index: int) -> str:
    return f"{mode}-{seed}-{index}"


def build(mode: str, chooser: Any) -> Any:
    """The generated case for `mode` (a FusionCase or a ScheduleCase)."""
    from tests.fuzz.gen import generate_fusion
    from tests.fuzz.sched_gen import random_schedule

    return generate_fusion(chooser) if mode == "fusion" else random_schedule(chooser)


def run_case(mode: str, chooser: Any, nvcc: bool = False) -> tuple[Outcome, Any]:
    """Generate one case and run it: (outcome, the case or None when generation failed)."""
    try:
        made = build(mode, chooser)
    except REFUSALS as e:
        return Outcome("refused", "definition " + category(e), str(e)), None
    except Exception as e:  # noqa: BLE001 - any other exception while defining is a bug
        return crash(e, "define"), None
    fusion_case = made if mode == "fusion" else made.case
    if mode == "schedule" and made.vague:
        return Outcome("crash", "vague sched refusal", "\n".join(made.vague)), made
    out = run_compiled(fusion_case.fd, fusion_case.inputs, nvcc)
    if mode == "schedule":
        out.stats = {"calls": len(made.calls), "refused_calls": made.refused_calls}
    else:
        out.stats = {"ops": len(made.ops)}
    return out, made


# ---- the child ------------------------------------------------------------------------------
def worker(mode: str, seed: int, start: int, stop: int, nvcc_every: int, deadline: float,
           cxx_opt: str = "") -> None:
    if cxx_opt:
        # The fuzz run tests the engine's code generation, not g++'s optimizer: a lower
        # optimization level makes each emulated kernel's compile cheaper.
        from engine.runtime import emulate

        emulate.CXX_FLAGS = tuple(cxx_opt if f.startswith("-O") else f for f in emulate.CXX_FLAGS)
    for i in range(start, stop):
        if deadline and time.time() > deadline:
            return
        print(f"{TAG}START {i}", flush=True)
        nvcc = nvcc_every > 0 and i % nvcc_every == 0
        outcome, _ = run_case(mode, RandomChooser(case_key(mode, seed, i)), nvcc)
        record = {"mode": mode, "seed": seed, "index": i, **asdict(outcome)}
        print(f"{TAG}RESULT {json.dumps(record)}", flush=True)


def _child_cmd(mode: str, seed: int, start: int, stop: int, nvcc_every: int, deadline: float,
               cxx_opt: str) -> list[str]:
    return [sys.executable, "-m", "tests.fuzz.runner", "worker", "--mode", mode, "--seed", str(seed),
            "--start", str(start), "--stop", str(stop), "--nvcc-every", str(nvcc_every),
            "--deadline", str(deadline), f"--cxx-opt={cxx_opt}"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_shard(mode: str, seed: int, start: int, stop: int, nvcc_every: int, deadline: float,
              cxx_opt: str, on_record: Callable[[dict], None]) -> None:
    """Cases [start, stop) in child processes, restarted after a case that kills one; no new
    case starts after `deadline` (time.time(); 0: none)."""
    while start < stop and not (deadline and time.time() > deadline):
        proc = subprocess.Popen(_child_cmd(mode, seed, start, stop, nvcc_every, deadline, cxx_opt), cwd=REPO, env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started, done = None, start
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith(TAG):
                continue
            word, _, rest = line[len(TAG):].partition(" ")
            if word == "START":
                started = int(rest)
            elif word == "RESULT":
                record = json.loads(rest)
                on_record(record)
                done, started = record["index"] + 1, None
        err = proc.stderr.read() if proc.stderr else ""
        rc = proc.wait()
        if started is None and (done >= stop or rc == 0):
            return
        at = started if started is not None else done
        on_record({"mode": mode, "seed": seed, "index": at, "kind": "crash",
                   "category": f"process died (exit {rc})", "detail": err[-3000:],
                   "segments": 0, "kernels": 0, "stats": {}})
        start = at + 1


def run_cases(mode: str, seed: int, count: int, jobs: int, nvcc_every: int = 0, deadline: float = 0.0,
              cxx_opt: str = "", on_record: Callable[[dict], None] | None = None,
              first: int = 0) -> list[dict]:
    """Records of cases first..first+count-1 (fewer when `deadline` passes), run over `jobs`
    children; every `nvcc_every`-th case also compiles its kernels with nvcc; `cxx_opt` (e.g.
    "-O0") replaces the emulator's g++ optimization level."""
    records: list[dict] = []
    lock = threading.Lock()

    def keep(r: dict) -> None:
        with lock:
            records.append(r)
            if on_record:
                on_record(r)

    jobs = max(1, min(jobs, count))
    bounds = [first + count * k // jobs for k in range(jobs + 1)]
    with ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(run_shard, mode, seed, bounds[k], bounds[k + 1], nvcc_every, deadline,
                               cxx_opt, keep)
                   for k in range(jobs) if bounds[k] < bounds[k + 1]]
        for f in futures:
            f.result()
    return sorted(records, key=lambda r: r["index"])


# ---- shrinking and saving a failing case ------------------------------------------------------
def fusion_of(made: Any) -> Any:
    return made if hasattr(made, "fd") else made.case


def shrink_and_save(mode: str, seed: int, index: int, out_dir: Path, do_shrink: bool = True,
                    budget: int = 60, force: bool = False) -> Path | None:
    """Rebuild a failing case, shrink it while it fails the same way, write its fusion file
    (with `force`, a case that passes or is refused is written too, unshrunk)."""
    from engine import dumps_fusion
    from tests.fuzz.shrink import shrink

    first = RandomChooser(case_key(mode, seed, index))
    outcome, made = run_case(mode, first)
    if outcome.kind in ("pass", "refused") and not force:
        return None
    draws = first.draws
    if do_shrink and not force:
        def still_fails(candidate: list[int]) -> list[int] | None:
            replay = ReplayChooser(candidate)
            o, _ = run_case(mode, replay)
            return replay.draws if (o.kind, o.category) == (outcome.kind, outcome.category) else None

        draws = shrink(draws, still_fails, budget)
        outcome, made = run_case(mode, ReplayChooser(draws))
    if made is None:
        return None
    case = fusion_of(made)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"fuzz_{mode}_{seed}_{index}.py"
    why = f"{outcome.kind}: {outcome.category}: {outcome.detail.splitlines()[0] if outcome.detail else ''}"
    header = f"# Found by tests/fuzz ({case_key(mode, seed, index)}), {why[:200]}\n"
    path.write_text(header + dumps_fusion(case.fd, inputs=case.inputs), encoding="utf-8")
    return path


def _save_one(r: dict, out_dir: Path, deadline: float) -> str | None:
    """Shrink and write one failing case in a child; unshrunk when shrinking fails or runs late."""
    for do_shrink in (True, False):
        cmd = [sys.executable, "-m", "tests.fuzz.runner", "save", "--mode", r["mode"], "--seed",
               str(r["seed"]), "--index", str(r["index"]), "--out", str(out_dir)]
        cmd += [] if do_shrink else ["--no-shrink"]
        left = deadline - time.time() if deadline else 900.0
        try:
            p = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True,
                               timeout=max(20.0, left))
        except subprocess.TimeoutExpired:
            continue
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip().splitlines()[-1]
    return None


def save_failures(records: Sequence[dict], out_dir: Path, limit: int, jobs: int = 1,
                  deadline: float = 0.0) -> list[str]:
    """Shrink and write up to `limit` failing cases (distinct categories first), `jobs` at a
    time, each in its own child; returns the paths written."""
    bad = [r for r in records if r["kind"] in ("mismatch", "crash")]
    firsts = list({(r["mode"], r["category"]): r for r in reversed(bad)}.values())[::-1]
    picked = (firsts + [r for r in bad if r not in firsts])[:limit]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        paths = list(pool.map(lambda r: _save_one(r, out_dir, deadline), picked))
    return [p for p in paths if p]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.runner")
    ap.add_argument("action", choices=["worker", "save"])
    ap.add_argument("--mode", choices=MODES, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--stop", type=int, default=0)
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--nvcc-every", type=int, default=0)
    ap.add_argument("--deadline", type=float, default=0.0)
    ap.add_argument("--cxx-opt", default="")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--force", action="store_true", help="write the case even if it passes now")
    ap.add_argument("--out", type=Path, default=REPO / "fuzz_failures")
    a = ap.parse_args(argv)
    if a.action == "worker":
        worker(a.mode, a.seed, a.start, a.stop, a.nvcc_every, a.deadline, a.cxx_opt)
        return
    path = shrink_and_save(a.mode, a.seed, a.index, a.out, not a.no_shrink, force=a.force)
    if path is not None:
        print(path)


if __name__ == "__main__":
    main()
