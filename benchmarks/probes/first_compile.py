"""The RoPE backward's first compile in a process against later ones, on the GPU, after the other
benchmark fusions were evaluated, compiled and run as benchmarks/run.py does before it: both
profiled, and the functions whose cumulative time differs most between them.

    PYTHONPATH=. python3 benchmarks/probes/first_compile.py
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import re
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.fusions import BF16, benchmark_fusions, rms_norm  # noqa: E402
from engine import fusion_cache  # noqa: E402
from engine.compile import compile_fusion  # noqa: E402
from engine.reference import evaluate  # noqa: E402

BEFORE = ["gelu_bias", "rms_norm", "layer_norm", "softmax", "inner_outer", "outer_sum"]


def warm_up() -> dict:
    """run.py's order up to the RoPE: its tiny warm-up fusion, then each earlier benchmark
    fusion's reference, compile and run."""
    xs = [torch.randn(8, 128, device="cuda").bfloat16(), torch.randn(128, device="cuda").bfloat16()]
    compile_fusion(rms_norm(BF16, 8, 128), xs).run(xs, backend="cuda")
    bench = {b.name: b for b in benchmark_fusions("full")}
    for name in BEFORE:
        x = bench[name].make_inputs("cuda", 0)
        evaluate(bench[name].build().fusion, x)
        compile_fusion(bench[name].build(), x).run(x, backend="cuda")
    torch.cuda.synchronize()
    return bench


def compile_ms(bf, xs: list, profile: bool) -> tuple[float, cProfile.Profile | None]:  # noqa: ANN001
    fusion_cache.clear()
    gc.collect()
    prof = cProfile.Profile() if profile else None
    t = time.perf_counter()
    if prof is not None:
        prof.enable()
    compile_fusion(bf.build(), xs)
    if prof is not None:
        prof.disable()
    return (time.perf_counter() - t) * 1e3, prof


def cumulative(prof: cProfile.Profile) -> dict[str, float]:
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumtime").print_stats(600)
    out = {}
    for line in s.getvalue().splitlines():
        m = re.match(r"\s*\S+\s+\S+\s+\S+\s+([\d.]+)\s+\S+\s+(.*)", line)
        if m:
            out[m.group(2)] = float(m.group(1))
    return out


def main() -> int:
    bench = warm_up()
    bf = bench["rope_bwd"]
    xs = bf.make_inputs("cuda", 0)
    evaluate(bf.build().fusion, xs)
    torch.cuda.synchronize()
    first, p1 = compile_ms(bf, xs, True)
    plain = [compile_ms(bf, xs, False)[0] for _ in range(4)]
    last, p2 = compile_ms(bf, xs, True)
    print(f"first (profiled) {first:.0f} ms, then {[round(t) for t in plain]}, last (profiled) {last:.0f} ms")
    a, b = cumulative(p1), cumulative(p2)
    for delta, name in sorted(((a[k] - b.get(k, 0.0), k) for k in a), reverse=True)[:30]:
        print(f"{delta * 1e3:8.1f} ms  {name[:140]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
