"""Two real-size sweeps of the same scripts (benchmarks/realworld.py reports), case by case: the
new engine's time per call (cf.run) and its kernels' summed time against the old engine's, and
both against nvFuser where the new sweep ran it. Kernel time (the profiler's, per call) is the
steadier figure on host-bound cases; the per-call time is what a user sees.

    python benchmarks/realworld_compare.py NEW.json OLD.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any


def _us(rec: dict[str, Any] | None, field: str = "engine_run") -> float | None:
    got = (rec or {}).get(field)
    return got["median_ms"] * 1e3 if isinstance(got, dict) and got.get("median_ms") else None


def _nvf_us(rec: dict[str, Any]) -> float | None:
    t = (rec.get("nvfuser") or {}).get("time")
    return t["median_ms"] * 1e3 if isinstance(t, dict) and t.get("median_ms") else None


def _kernel_us(rec: dict[str, Any] | None) -> float | None:
    ks = (rec or {}).get("kernels") or []
    total = sum(k.get("time_us") or 0 for k in ks)
    return total or None


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def compare(new_rows: list[dict[str, Any]], old_rows: list[dict[str, Any]]) -> list[str]:
    old = {r["key"]: r for r in old_rows}
    lines = [f"{'case':60s} {'old us':>8s} {'new us':>8s} {'new/old':>7s} {'kern old':>8s} {'kern new':>8s} "
             f"{'k n/o':>5s} {'nvf us':>8s} {'new/nvf':>7s} kernels old/new/nvf"]
    per_call: list[float] = []
    kernel: list[float] = []
    for r in new_rows:
        o = old.get(r["key"])
        tn, to, tv = _us(r), _us(o), _nvf_us(r)
        kn, ko = _kernel_us(r), _kernel_us(o)
        if tn and to:
            per_call.append(tn / to)
        if kn and ko:
            kernel.append(kn / ko)

        def f(x: float | None) -> str:
            return f"{x:8.1f}" if x else f"{'-':>8s}"

        def g(a: float | None, b: float | None) -> str:
            return f"{a / b:7.2f}" if a and b else f"{'-':>7s}"

        counts = f"{(o or {}).get('engine_kernels', '-')}/{r.get('engine_kernels', '-')}/{(r.get('nvfuser') or {}).get('kernels', '-')}"
        lines.append(f"{r['key'][-60:]:60s} {f(to)} {f(tn)} {g(tn, to)} {f(ko)} {f(kn)} {g(kn, ko)[2:]} {f(tv)} "
                     f"{g(tn, tv)} {counts}")
    lines.append(f"geometric mean new/old: per call {_geomean(per_call):.3f} over {len(per_call)} cases; "
                 f"kernel time {_geomean(kernel):.3f} over {len(kernel)}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("new", type=Path)
    ap.add_argument("old", type=Path)
    a = ap.parse_args()
    rows = [json.loads(p.read_text())["rows"] for p in (a.new, a.old)]
    print("\n".join(compare(*rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
