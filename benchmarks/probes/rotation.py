"""Whether a kernel variant's speed-up survives rotating input sets: a change to cache
behaviour (L2 eviction hints, say) could look faster only because one input set, timed over
and over, leaves part of itself in L2 for the next call. Times the engine end to end on one
input set and on several (each call reads another), variants in alternating rounds.

    PYTHONPATH=. python3 benchmarks/probes/rotation.py FUSION BASE.cu VARIANT.cu ... [--sets 1 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.fusions import benchmark_fusions  # noqa: E402
from benchmarks.timing import time_calls  # noqa: E402
from engine.compile import compile_fusion  # noqa: E402
from engine.config import Options  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fusion")
    ap.add_argument("sources", nargs="+", help="kernel sources for segment 0 (FILE.cu or FILE.cu@OVERRIDES_JSON)")
    ap.add_argument("--sets", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer", action="store_true", help="torch.compile too")
    ap.add_argument("--peer-mode", default=None, help="its mode (default: the default mode)")
    a = ap.parse_args()
    bf = next((b for b in benchmark_fusions("full") if b.name == a.fusion), None)
    if bf is None:
        raise SystemExit(f"no benchmark fusion {a.fusion!r}")
    pool = [bf.make_inputs("cuda", k) for k in range(max(a.sets))]
    fns = {}
    for spec in a.sources:
        src, _, overrides = spec.partition("@")  # FILE.cu@{"lparams.bdimx": 512, ...}; "-": generated
        opts = Options(kernel_sources={0: Path(src).read_text()} if src != "-" else {},
                       heuristic_overrides=json.loads(overrides) if overrides else {})
        cf = compile_fusion(bf.build(), pool[0], opts)
        fns[Path(src).stem if src != "-" else f"generated{overrides}"] = lambda x, cf=cf: cf.run(x, backend="cuda")
    if a.peer:
        import torch

        compiled = torch.compile(bf.torch_fn, mode=a.peer_mode, dynamic=False)
        fns["torch.compile"] = lambda x: compiled(*x)
    for n in a.sets:
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(a.rounds):
            for name, fn in fns.items():
                r = time_calls(fn, pool[:n], target_ms=150)
                times[name].append(r["median_ms"] * 1e3)
        base = statistics.median(next(iter(times.values())))
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"{a.fusion} sets={n} {name:32s} {m:7.1f} us  x{m / base:.3f}  {[round(t, 1) for t in ts]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
