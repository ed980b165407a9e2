"""Time the emulator's g++ compiles of fusion files' kernels, in one process, from a fresh
cache folder (a temporary one unless --cache is given): wall time and the CPU time of the
compiler processes, per file and in all. Files are compiled first (not timed).

    PYTHONPATH=. python3 benchmarks/emu_compile.py FILE|SAMPLE ... [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import load_fusion  # noqa: E402
from engine.compile import CompiledFusion, compile_fusion  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "sample_fusions"


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _load_all(cf: CompiledFusion) -> int:
    """Compile every kernel of `cf` for the emulator as a run does; the number of kernels."""
    kernels = [s for s in cf.segments if s.is_kernel]
    if hasattr(cf, "load_kernels"):  # all at once, when this engine can
        cf.load_kernels("emulate")
    for seg in kernels:
        seg.kernel("emulate")
    return len(kernels)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="fusion files, or names of sample_fusions/*.py")
    ap.add_argument("--cache", help="cache folder to use (default: a new temporary one)")
    a = ap.parse_args()
    os.environ["FUSESCOPE_CACHE"] = a.cache or tempfile.mkdtemp(prefix="fs-emu-bench-")
    compiled = []
    for name in a.files:
        path = Path(name) if Path(name).exists() else SAMPLES / f"{name}.py"
        fd = load_fusion(path)
        compiled.append((path.stem, compile_fusion(fd, fd.example_inputs(seed=0))))
    total_wall = total_cpu = 0.0
    total_kernels = 0
    for stem, cf in compiled:
        cpu0, wall0 = _children_cpu_s(), time.perf_counter()
        n = _load_all(cf)
        wall, cpu = time.perf_counter() - wall0, _children_cpu_s() - cpu0
        total_wall, total_cpu, total_kernels = total_wall + wall, total_cpu + cpu, total_kernels + n
        print(f"{stem}: {n} kernels, {wall:.2f} s wall, {cpu:.2f} s g++ CPU", flush=True)
    print(f"all: {total_kernels} kernels, {total_wall:.2f} s wall, {total_cpu:.2f} s g++ CPU "
          f"(cache {os.environ['FUSESCOPE_CACHE']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
