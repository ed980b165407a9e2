"""What torch.compile's kernels are, beside the engine's, for chosen benchmark fusions: the
Triton config each autotuned kernel settled on (block sizes, warps, stages, registers,
spills), the generated Triton source, and a profiled region holding one call of each so that
ncu can compare them without the autotuning launches.

    python3 benchmarks/probes/peer_kernels.py OUTDIR layer_norm rms_norm [--mode max-autotune-no-cudagraphs]
    ncu --profile-from-start off --section SpeedOfLight ... python3 benchmarks/probes/peer_kernels.py ...

The sources land in OUTDIR/inductor_sources.txt; the configs are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.fusions import benchmark_fusions  # noqa: E402
from engine.compile import compile_fusion  # noqa: E402
from engine.config import Options  # noqa: E402


def autotuned_kernels() -> list[tuple[str, object]]:
    """Every Triton kernel inductor has loaded in this process, with its caching autotuner."""
    from torch._inductor.codecache import PyCodeCache

    found = []
    for mod in list(PyCodeCache.modules):
        for name, obj in vars(mod).items():
            if hasattr(obj, "launchers") and hasattr(obj, "configs"):
                found.append((f"{mod.__name__}.{name}", obj))
    return found


def describe(tuner: object) -> str:
    parts = []
    for launcher in getattr(tuner, "launchers", []):
        cfg = getattr(launcher, "config", None)
        parts.append(f"config {cfg}, regs {getattr(launcher, 'n_regs', '?')}, "
                     f"spills {getattr(launcher, 'n_spills', '?')}, shared {getattr(launcher, 'shared', '?')}")
    return " | ".join(parts) or "no launcher yet"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--mode", default=None)
    ap.add_argument("--overrides", default="{}", help="the engine's heuristic overrides, JSON")
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    bench = {b.name: b for b in benchmark_fusions("full")}
    unknown = [n for n in a.names if n not in bench]
    if unknown:
        raise SystemExit(f"no benchmark fusion {', '.join(map(repr, unknown))} in benchmarks/fusions.py")
    calls = []
    for name in a.names:
        bf = bench[name]
        xs = bf.make_inputs("cuda", 0)
        cf = compile_fusion(bf.build(), xs, Options(heuristic_overrides=json.loads(a.overrides)))
        fn = torch.compile(bf.torch_fn, mode=a.mode, dynamic=False)
        for _ in range(3):  # autotuning, module loads
            cf.run(xs, backend="cuda")
            fn(*xs)
        torch.cuda.synchronize()
        calls.append((name, cf, fn, xs))
    sources = []
    for key, tuner in autotuned_kernels():
        print(f"{key}: {describe(tuner)}")
        src = getattr(getattr(tuner, "fn", None), "src", None)
        if src:
            sources.append(f"# ---- {key}\n{src}\n")
    (out / "inductor_sources.txt").write_text("\n".join(sources))
    torch.cuda.profiler.start()
    for name, cf, fn, xs in calls:
        torch.cuda.nvtx.range_push(name)
        cf.run(xs, backend="cuda")
        fn(*xs)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
