"""Differential fuzzing of the whole pipeline: random fusions and random manual schedules,
compiled, emulated (g++) and compared with the reference evaluator.

    python scripts/fuzz.py --fusions 10000 --schedules 2000 --seed 1 --jobs 16 --out DIR

Prints a summary (cases generated, segments, kernels, accepted and refused schedules,
refusal categories, mismatches, crashes, elapsed time), writes each failing case (shrunk)
as a fusion file under --out, and exits 1 when any case mismatched or crashed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fuzz.runner import run_cases, save_failures  # noqa: E402


def summarize(mode: str, records: list[dict]) -> tuple[list[str], int]:
    """Summary lines for one mode's records, and how many cases failed."""
    kinds = Counter(r["kind"] for r in records)
    lines = [f"{mode}: {len(records)} generated, " + ", ".join(f"{k} {kinds[k]}" for k in
                                                               ("pass", "refused", "mismatch", "crash"))]
    ran = [r for r in records if r["kind"] in ("pass", "mismatch")]
    lines.append(f"  segments {sum(r['segments'] for r in ran)}, kernels {sum(r['kernels'] for r in ran)} "
                 f"(over {len(ran)} compiled cases)")
    if mode == "schedule":
        calls = sum(r["stats"].get("calls", 0) for r in records)
        refused = sum(r["stats"].get("refused_calls", 0) for r in records)
        lines.append(f"  schedules accepted (emulated) {kinds['pass'] + kinds['mismatch']}, refused at "
                     f"compile {kinds['refused']}; sched calls {calls + refused}, refused calls {refused}")
    refusals = Counter(r["category"] for r in records if r["kind"] == "refused")
    for cat, n in refusals.most_common():
        lines.append(f"  refused {n:5d}  {cat}")
    for r in records:
        if r["kind"] in ("mismatch", "crash"):
            first = r["detail"].splitlines()[0] if r["detail"] else ""
            lines.append(f"  {r['kind'].upper()} case {r['index']}: {r['category']}: {first[:200]}")
    return lines, kinds["mismatch"] + kinds["crash"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fusions", type=int, default=300, help="random fusions to run")
    ap.add_argument("--schedules", type=int, default=200, help="random manual schedules to run")
    ap.add_argument("--seed", type=int, default=0, help="run seed: case i is rebuilt from (mode, seed, i)")
    ap.add_argument("--first", type=int, default=0,
                    help="index of the first case of each mode: a long run split over several calls "
                         "(--first 0, then --first N with the same seed) runs the same cases as one call")
    ap.add_argument("--jobs", type=int, default=2, help="child processes")
    ap.add_argument("--nvcc-every", type=int, default=10,
                    help="every K-th case also compiles its kernels with nvcc for sm_80 (0: never)")
    ap.add_argument("--time-budget", type=float, default=0.0,
                    help="seconds after which no new case starts (split between fusions and schedules "
                         "by their counts; 0: none); the summary says how many ran")
    ap.add_argument("--out", type=Path, default=Path("fuzz_failures"), help="where failing cases go")
    ap.add_argument("--save", type=int, default=20, help="at most this many failing cases are shrunk and saved")
    ap.add_argument("--cxx-opt", default="",
                    help="g++ optimization level for the emulated kernels (e.g. -O0: faster compiles; "
                         "default: the engine's own flags)")
    ap.add_argument("--save-budget", type=float, default=0.0,
                    help="seconds for shrinking and saving failing cases (0: no limit)")
    ap.add_argument("--json", type=Path, help="also write every case's record here")
    a = ap.parse_args(argv)
    start = time.perf_counter()
    failures, lines, records_all = 0, [], []
    total = max(1, a.fusions + a.schedules)
    for mode, count in (("fusion", a.fusions), ("schedule", a.schedules)):
        if count <= 0:
            continue
        t0 = time.perf_counter()
        share = a.time_budget * count / total
        deadline = time.time() + share if a.time_budget else 0.0
        records = run_cases(mode, a.seed, count, a.jobs, a.nvcc_every, deadline, a.cxx_opt, first=a.first)
        mode_lines, failed = summarize(mode, records)
        lines += mode_lines + [f"  elapsed {time.perf_counter() - t0:.1f} s"]
        failures += failed
        records_all += records
    if a.json:
        a.json.write_text(json.dumps(records_all), encoding="utf-8")
    save_deadline = time.time() + a.save_budget if a.save_budget else 0.0
    saved = save_failures(records_all, a.out.resolve(), a.save, a.jobs, save_deadline) if failures else []
    lines += [f"saved: {p}" for p in saved]
    lines.append(f"total: {failures} failing cases; elapsed {time.perf_counter() - start:.1f} s "
                 f"with {a.jobs} jobs")
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
