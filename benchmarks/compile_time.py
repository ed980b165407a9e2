"""The engine's Python compile time for one benchmark fusion: define + compile_fusion, repeated
(the first call also pays imports and warm-ups), on the device's inputs when CUDA is there.

    PYTHONPATH=. python3 benchmarks/compile_time.py [NAME ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fusions import benchmark_fusions  # noqa: E402
from engine import fusion_cache  # noqa: E402
from engine.compile import compile_fusion  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=["rope_bwd", "rope_bwd_b1"])
    ap.add_argument("--repeat", type=int, default=4)
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for bf in benchmark_fusions("full"):
        if bf.name not in a.names:
            continue
        xs = bf.make_inputs(device, 0)
        times = []
        for _ in range(a.repeat):
            fusion_cache.clear()  # the pipeline itself, not a definition compiled before
            gc.collect()  # as run.py: earlier garbage is not charged to this compile
            t = time.perf_counter()
            compile_fusion(bf.build(), xs)
            times.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        compile_fusion(bf.build(), xs)  # the same definition again: the fusion cache
        again = (time.perf_counter() - t) * 1e3
        print(f"{bf.name}: define + compile_fusion ms on {device} inputs: {[round(x) for x in times]}; "
              f"again (fusion cache) {again:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
