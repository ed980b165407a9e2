"""Paired compile timing of two checkouts of the engine: which one compiles faster, measured
so that a shared, busy host does not decide it.

One worker process per checkout (each imports its own `engine`), both warmed up; then the
two compile the same benchmark fusion in lockstep, alternating which goes first, and each
pair's ratio (A's time / B's time) is taken. Load that swings over seconds affects both
halves of a pair alike, so the median pair ratio and its quartiles say more than either
side's own times. Timed as benchmarks/compile_time.py times: define + compile_fusion on CPU
inputs, the fusion cache cleared and garbage collected first.

    python scripts/compile_ab.py BASE_CHECKOUT NEW_CHECKOUT rope_bwd,layer_norm [-n 30]

A ratio above 1 means NEW compiles faster than BASE.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

WARM_UPS = 2


def _worker(names: list[str]) -> None:
    """Serve timing requests on stdin: one fusion name a line, one time (ms) a line back."""
    import gc
    import time

    from benchmarks.fusions import benchmark_fusions
    from engine import fusion_cache
    from engine.compile import compile_fusion

    fusions = {bf.name: bf for bf in benchmark_fusions("full") if bf.name in names}
    missing = set(names) - fusions.keys()
    if missing:
        raise SystemExit(f"unknown benchmark fusions: {', '.join(sorted(missing))}")
    inputs = {n: bf.make_inputs("cpu", 0) for n, bf in fusions.items()}
    for n, bf in fusions.items():
        for _ in range(WARM_UPS):
            fusion_cache.clear()
            compile_fusion(bf.build(), inputs[n])
    print("ready", flush=True)
    for line in sys.stdin:
        n = line.strip()
        fusion_cache.clear()
        gc.collect()
        t = time.perf_counter()
        compile_fusion(fusions[n].build(), inputs[n])
        print(f"{(time.perf_counter() - t) * 1e3:.3f}", flush=True)


class _Checkout:
    """A worker process compiling with the engine of one checkout."""

    def __init__(self, path: Path, names: list[str]) -> None:
        self.path = path
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", ",".join(names)],
            cwd=path, env={**os.environ, "PYTHONPATH": str(path)},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        if ready != "ready":
            raise SystemExit(f"the worker for {path} did not start")

    def time(self, name: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def compare(a: _Checkout, b: _Checkout, name: str, pairs: int) -> str:
    """One line: both sides' median and minimum ms and the median pair ratio with its IQR."""
    ta, tb, ratios = [], [], []
    for k in range(pairs):
        if k % 2:  # alternate the order: the second of a pair may find warmer caches
            y = b.time(name)
            x = a.time(name)
        else:
            x = a.time(name)
            y = b.time(name)
        ta.append(x)
        tb.append(y)
        ratios.append(x / y)
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return (f"{name}: A med {statistics.median(ta):.1f} min {min(ta):.1f} ms | "
            f"B med {statistics.median(tb):.1f} min {min(tb):.1f} ms | "
            f"median A/B {statistics.median(ratios):.3f} (IQR {q1:.3f}-{q3:.3f}, {pairs} pairs)")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        _worker(sys.argv[2].split(","))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path, help="checkout A (the baseline)")
    ap.add_argument("new", type=Path, help="checkout B (the change)")
    ap.add_argument("names", help="benchmark fusion names, comma-separated")
    ap.add_argument("-n", "--pairs", type=int, default=30, help="pairs per fusion (default 30)")
    args = ap.parse_args()
    names = args.names.split(",")
    a = _Checkout(args.base.resolve(), names)
    b = _Checkout(args.new.resolve(), names)
    try:
        for name in names:
            print(compare(a, b, name, args.pairs), flush=True)
    finally:
        a.close()
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
