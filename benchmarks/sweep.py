"""Time one benchmark fusion's kernels under several heuristic overrides (and optional kernel
source replacements), in one process, against the default heuristics measured in the same run.

    python3 benchmarks/sweep.py inner_outer '{}' '{"lparams.gdimy": 264}' ...
    python3 benchmarks/sweep.py inner_outer '{"kernel_sources": {"0": "edited.cu"}}'

Each variant is a JSON object of Options.heuristic_overrides keys; the key "kernel_sources"
maps segment ids to CUDA files that replace the generated kernels. Prints one line per variant:
the kernel times (us) from CompiledFusion.profile, their sum, the ratio to the first variant,
and whether the outputs match the reference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the engine, without PYTHONPATH

from fusions import benchmark_fusions  # noqa: E402

from engine.compile import compile_fusion  # noqa: E402
from engine.config import Options  # noqa: E402
from engine.reference import evaluate  # noqa: E402


def options_for(variant: dict) -> Options:
    sources = {int(k): Path(v).read_text() for k, v in variant.pop("kernel_sources", {}).items()}
    return Options(heuristic_overrides=variant, kernel_sources=sources)


def matches(outs: list, refs: list) -> bool:
    for o, r in zip(outs, refs):
        if not isinstance(o, torch.Tensor):
            continue
        if o.element_size() == 1:
            if not torch.equal(o.view(torch.uint8), r.view(torch.uint8)):
                return False
        elif not torch.allclose(o.double(), r.double(), rtol=1e-2, atol=1e-2 * max(1.0, r.abs().max().item())):
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fusion")
    ap.add_argument("variants", nargs="*", default=["{}"])
    ap.add_argument("--scale", default="full", choices=["full", "small"])
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_intermixed_args()
    bench = {b.name: b for b in benchmark_fusions(args.scale)}.get(args.fusion)
    if bench is None:
        print(f"no benchmark fusion {args.fusion!r}", file=sys.stderr)
        return 2
    backend = "cuda" if torch.cuda.is_available() else "emulate"
    fd = bench.build()
    xs = bench.make_inputs("cuda" if backend == "cuda" else "cpu", 0)
    refs = evaluate(fd.fusion, xs)
    base = None
    for text in args.variants:
        try:
            cf = compile_fusion(fd, xs, options_for(json.loads(text)))
            ok = matches(cf.run(xs, backend=backend), refs)
            profs = cf.profile(xs, backend, repeat=args.repeat)
            times = [p.time_ms * 1e3 for p in profs]
        except Exception as e:  # a variant the engine refuses is a result too
            print(f"{text}: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        total = sum(times)
        base = base or total
        res = "; ".join(f"{p.registers} regs, {p.local_bytes} B local, occupancy {p.occupancy}" for p in profs)
        launch = "; ".join(str(s.launch) for s in cf.segments if s.launch is not None)
        print(f"{text}: kernels {[round(t, 1) for t in times]} us, sum {total:.1f} us, "
              f"x{total / base:.2f}, {'ok' if ok else 'MISMATCH'} | {res} | {launch}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
