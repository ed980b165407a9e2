"""The host side of one real-world script's calls, in a process of its own: at the script's
real size, the run plan's CUDA-graph state, cf.run and fd.execute per call (CUDA events,
rotating input sets, as benchmarks/realworld.py times them), cf.run's device time per call
(calls queued behind a sleep), and a cProfile of 300 cf.run calls. A long sweep's per-call
figures of a host-bound case move with that process's host; this one does not.

    PYTHONPATH=. python benchmarks/probes/host_per_call.py NAME [NAME ...]   # on a GPU
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.probes.variants import real_size_case  # noqa: E402
from benchmarks.timing import time_calls  # noqa: E402
from engine import compile_fusion  # noqa: E402

SCRIPTS = ROOT / "tests" / "realworld" / "scripts"
CAP = 1 << 31  # most elements of one input


def report(name: str, device: str) -> None:
    case = real_size_case(name, device, 4, CAP, own_size=True)
    if case is None:
        print(f"## {name}: no script of {SCRIPTS} starts with this name")
        return
    path, fd, sets = case
    xs = sets[0]
    cf = compile_fusion(fd, xs)
    backend = "cuda" if device == "cuda" else "emulate"
    for k in range(12):
        cf.run(sets[k % len(sets)], backend=backend)
    plan = cf._plans.get(backend)
    g = getattr(plan, "graph", None)
    state = None if g is None else {"steps": g.n_steps, "refused": g.refused, "kept": g.kept,
                                    "replays": g.replays}
    print(f"## {path.stem}: {len(plan.steps) if plan else '-'} steps; graph {state}")
    for label, fn in (("cf.run", lambda x: cf.run(x, backend=backend)), ("fd.execute", fd.execute)):
        r = time_calls(fn, sets, device=device, warmup=20, target_ms=300)
        print(f"{label}: median {r['median_ms'] * 1e3:.1f} us, min {r['min_ms'] * 1e3:.1f} us, reps {r['reps']}")
    if device == "cuda":
        r = time_calls(lambda x: cf.run(x, backend=backend), sets, device=device, warmup=5, target_ms=300,
                       queue_full=True)
        print(f"cf.run behind a sleep (device time a call): median {r['median_ms'] * 1e3:.1f} us")
    pr = cProfile.Profile()
    pr.enable()
    for k in range(300):
        cf.run(sets[k % len(sets)], backend=backend)
    if device == "cuda":
        torch.cuda.synchronize()
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(18)
    print("\n".join(out.getvalue().splitlines()[:45]))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for name in argv:
        report(name, device)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
