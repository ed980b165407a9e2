"""What the kernel-variant probes share: a hand edit that must match exactly once, and writing
one benchmark's variants next to the sweep command that times them against the generated
kernel (benchmarks/sweep.py, one process, the generated kernel first and last)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def once(src: str, old: str, new: str) -> str:
    """`src` with its one `old` replaced: an engine change that moves the code fails loudly."""
    if src.count(old) != 1:
        raise SystemExit(f"expected exactly one {old[:60]!r} in the generated kernel")
    return src.replace(old, new)


def write_variants(fusion: str, variants: Callable[[str], dict[str, str]], argv: list[str]) -> int:
    """Compile the benchmark `fusion`, write `variants` of its first kernel to OUTDIR (argv[1],
    default .probe) as FUSION_NAME.cu, and print the sweep command that times them."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.fusions import benchmark_fusions
    from engine.compile import compile_fusion

    outdir = Path(argv[1] if len(argv) > 1 else ".probe")
    outdir.mkdir(parents=True, exist_ok=True)
    bf = next((b for b in benchmark_fusions("full") if b.name == fusion), None)
    if bf is None:
        raise SystemExit(f"no benchmark fusion {fusion!r} in benchmarks/fusions.py")
    cf = compile_fusion(bf.build(), bf.make_inputs("cpu", 0))
    names = []
    for name, text in variants(cf.segments[0].cuda_source).items():
        (outdir / f"{fusion}_{name}.cu").write_text(text)
        names.append(name)
    runs = [f'{{"kernel_sources": {{"0": "{outdir}/{fusion}_{n}.cu"}}}}' for n in [*names, "base"]]
    print(f"python3 benchmarks/sweep.py {fusion} " + " ".join(shlex.quote(r) for r in runs) + " --repeat 300")
    return 0
