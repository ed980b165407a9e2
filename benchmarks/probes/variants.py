"""What the probes share: a hand edit that must match exactly once, writing one benchmark's
variants next to the sweep command that times them against the generated kernel
(benchmarks/sweep.py, one process, the generated kernel first and last), and a real-world
script's fusion and input sets at its real size (host_per_call)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def real_size_case(name: str, device: str, n_sets: int, cap: int,
                   own_size: bool = False) -> tuple[Path, Any, list[list[Any]]] | None:
    """The script of tests/realworld/scripts starting with `name`, its fusion and `n_sets`
    input sets (seeds 0, 1, ...) on `device` at its `# real-sizes:` line's size; at the
    script's own size when it has none and `own_size`, else SystemExit. None when no script
    starts with `name`."""
    sys.path.insert(0, str(ROOT))
    from engine import loads_fusion
    from scripts.scales import real_scale, scaled_fusion, scaled_inputs

    path = next((ROOT / "tests" / "realworld" / "scripts").glob(name + "*.py"), None)
    if path is None:
        return None
    text = path.read_text()
    fd0 = loads_fusion(text, filename=str(path))
    xs0 = fd0.example_inputs(device="cpu", seed=0)
    specs = fd0.input_specs or [None] * len(xs0)
    scale = real_scale(text)
    if scale is None:
        if not own_size:
            raise SystemExit(f"{path.name} has no '# real-sizes:' line")
        return path, fd0, [fd0.example_inputs(device=device, seed=s) for s in range(n_sets)]
    fd, xs = scaled_fusion(path, text, scale, xs0, specs, cap, device)
    return path, fd, [xs] + [scaled_inputs(scale, xs0, specs, cap, device, s) for s in range(1, n_sets)]
