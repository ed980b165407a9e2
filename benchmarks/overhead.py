"""Per-call cost on tiny inputs (launch-bound): the benchmark table's fusions at the unit
tests' sizes (benchmarks/fusions.py, scale "small"), each called back to back, as a training
loop calls a small fusion. The figure is host wall time per call over `--calls` calls, the
GPU synchronized before and after (the kernels themselves take a few microseconds):

  fd.execute      FusionDefinition.execute, what users call
  fd.execute+graph  the same with cuda_graph=True (a CUDA graph replayed per call)
  cf.run          CompiledFusion.run(xs, backend="cuda")
  nvFuser         nvfuser_direct's execute of the same definition (benchmarks/nvf.py)
  eager           the hand-written torch function

The rounds alternate between the systems (median of `--rounds`), so all of them see the
machine in the same state. Writes overhead.json and overhead.md under --out.

    PYTHONPATH=. python benchmarks/overhead.py [--out DIR] [--calls 2000] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.fusions import benchmark_fusions  # noqa: E402
from engine import compile_fusion  # noqa: E402

SYSTEMS = ("fd.execute", "fd.execute+graph", "cf.run", "nvFuser", "eager")


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / calls * 1e6


def systems_for(bf: Any, nvf: Any) -> dict[str, Callable[[], Any]]:
    xs = bf.make_inputs("cuda", 0)
    fd = bf.build()
    cf = compile_fusion(fd, xs)
    fns: dict[str, Callable[[], Any]] = {
        "fd.execute": lambda: fd.execute(xs),
        "cf.run": lambda: cf.run(xs, backend="cuda"),
    }
    gfd = bf.build()
    fns["fd.execute+graph"] = lambda: gfd.execute(xs, cuda_graph=True)
    if bf.torch_fn is not None:
        fns["eager"] = lambda: bf.torch_fn(*xs)
    if nvf is not None:
        from benchmarks.nvf import mirror

        try:
            nfd = mirror(fd, nvf)
            nfd.execute(xs)
            fns["nvFuser"] = lambda: nfd.execute(xs)
        except Exception as e:  # nvFuser refuses some definitions (fp4 on sm_90)
            print(f"  nvFuser: {type(e).__name__}: {str(e).strip().splitlines()[0][:160]}", flush=True)
    for fn in fns.values():  # compile, capture, warm
        for _ in range(3):
            fn()
    return fns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/fusescope-overhead"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        from benchmarks.nvf import import_nvfuser

        nvf, why = import_nvfuser()
    except Exception as e:
        nvf, why = None, f"{type(e).__name__}: {e}"
    print(f"nvFuser: {why}", flush=True)
    rows = []
    for bf in benchmark_fusions("small"):
        if args.only and not any(o in bf.name for o in args.only):
            continue
        fns = systems_for(bf, nvf)
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                times[k].append(per_call_us(fn, args.calls))
        row = {"name": bf.name, "shape": bf.shape, **{k: round(statistics.median(v), 2) for k, v in times.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "overhead.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "calls": args.calls,
                                                        "rounds": args.rounds, "rows": rows}, indent=1))
    lines = ["| fusion (small) | " + " | ".join(f"{s} us" for s in SYSTEMS) + " | execute / nvFuser | graph / nvFuser |",
             "|---" * (len(SYSTEMS) + 3) + "|"]
    for r in rows:
        cells = [f"{r[s]:.1f}" if s in r else "-" for s in SYSTEMS]
        ratio = f"{r['fd.execute'] / r['nvFuser']:.2f}" if "nvFuser" in r else "-"
        gratio = f"{r['fd.execute+graph'] / r['nvFuser']:.2f}" if "nvFuser" in r else "-"
        lines.append(f"| {r['name']} {r['shape']} | " + " | ".join(cells) + f" | {ratio} | {gratio} |")
    (args.out / "overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
