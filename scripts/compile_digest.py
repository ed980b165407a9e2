"""Everything the compile pipeline produces, as one digest per fusion: to show that a change
meant to be invisible (a faster pass, a refactor) changes no output.

For every benchmark fusion (at the CI sizes) and every fusion file (bundled samples, real-world
scripts that compile, regression fusions), compile at the example inputs on the CPU and hash:
the trace's stages (IR listings, segmented fusion, params, kernel IR, CUDA, launch, host IR),
every trace event with its data, and each segment's scheduler, params, scheduled IR, kernel
source and launch. A compile error is part of the digest too (its type and message).

    python scripts/compile_digest.py -o before.json     # on the old commit
    python scripts/compile_digest.py -o after.json      # on the new one
    python scripts/compile_digest.py --diff before.json after.json

It digests the engine of the checkout it lies in (it puts that checkout first on sys.path):
to digest another worktree, run that worktree's copy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _text(cf: Any) -> str:
    parts = []
    for name, text in cf.trace.stages.items():
        parts.append(f"== stage {name}\n{text}")
    for e in cf.trace.events:
        parts.append(f"== event {e.kind} {e.subject}: {e.message}\n{json.dumps(e.data, sort_keys=True, default=str)}")
    for s in cf.segments:
        parts.append(f"== segment {s.id} {s.scheduler} {s.inputs} {s.outputs}\n{s.params}\n{s.scheduled_ir}\n"
                     f"{s.kernel_ir}\n{s.cuda_source}\n{s.launch}")
    parts.append(f"== host\n{cf.host_ir}")
    return "\n".join(parts)


def _digest(build: Any) -> tuple[str, float]:
    from engine import fusion_cache

    fusion_cache.clear()
    t = time.perf_counter()
    try:
        fd, xs = build()
        from engine.compile import compile_fusion

        text = _text(compile_fusion(fd, xs))
    except Exception as e:  # noqa: BLE001 - a refusal is an output too
        text = f"error {type(e).__name__}: {e}"
    # Errors name their file: the same fusion in another checkout digests the same.
    text = text.replace(str(ROOT), "<root>")
    return hashlib.sha256(text.encode()).hexdigest()[:16], (time.perf_counter() - t) * 1e3


def _jobs(full: bool) -> dict[str, Any]:
    from benchmarks.fusions import benchmark_fusions
    from engine import load_fusion
    from tests.realworld.test_realworld import SCRIPTS, WORKS

    jobs: dict[str, Any] = {}
    for size in ("ci", "full") if full else ("ci",):
        for bf in benchmark_fusions(size):
            jobs[f"bench-{size}/{bf.name}"] = lambda bf=bf: (bf.build(), bf.make_inputs("cpu", 0))
    files = [*(SCRIPTS / f"{n}.py" for n in WORKS),
             *sorted((ROOT / "tests" / "regressions" / "fusions").glob("*.py")),
             *sorted((ROOT / "sample_fusions").glob("*.py"))]
    for p in files:
        def build(p: Path = p) -> tuple[Any, Any]:
            fd = load_fusion(p)
            return fd, fd.example_inputs(device="cpu", seed=0)
        jobs[f"{p.parent.name}/{p.stem}"] = build
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the digests (JSON) here")
    ap.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="compare two digest files")
    ap.add_argument("--full", action="store_true", help="the benchmark fusions at their full sizes too")
    ap.add_argument("--only", nargs="*", default=[], help="substrings of the names to compile")
    a = ap.parse_args()
    if a.diff:
        old, new = (json.loads(Path(p).read_text()) for p in a.diff)
        changed = sorted(k for k in old.keys() & new.keys() if old[k] != new[k])
        for k in changed:
            print(f"changed: {k}")
        for k in sorted(old.keys() ^ new.keys()):
            print(f"only in {'OLD' if k in old else 'NEW'}: {k}")
        print(f"{len(changed)} changed of {len(old.keys() & new.keys())}")
        return 1 if changed or old.keys() != new.keys() else 0
    out: dict[str, str] = {}
    total = 0.0
    for name, build in _jobs(a.full).items():
        if a.only and not any(s in name for s in a.only):
            continue
        out[name], ms = _digest(build)
        total += ms
    print(f"{len(out)} fusions compiled in {total / 1e3:.1f} s")
    if a.output:
        Path(a.output).write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
