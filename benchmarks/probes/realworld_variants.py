"""Hand edits of one real-world script's generated kernel, timed at the script's real size in
one process against the kernel as generated (first and last: the kernel's device time by
cf.profile, the call's by CUDA events), each checked against the generated kernel's
outputs. The questions are the ones a kernel's gap to nvFuser's raises when the launch
configuration is the same: is it the loads' cache hint, the math, the unrolling?

    PYTHONPATH=. python3 benchmarks/probes/realworld_variants.py NAME SEG [EDIT ...]   # on a GPU

An EDIT is NAME=OLD=>NEW (every occurrence of OLD in segment SEG's CUDA replaced by NEW; a
variant whose OLD is absent is reported and skipped) or one of the named edits below.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.probes.variants import real_size_case  # noqa: E402
from benchmarks.timing import time_calls  # noqa: E402
from engine import compile_fusion, fusion_cache  # noqa: E402
from engine.config import Options  # noqa: E402

NAMED = {
    "plain_loads": ("loadGlobalEvictLast<", "loadGeneric<"),
    "fast_exp": ("expf(", "__expf("),
}
CAP = 1 << 34


def _edits(args: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for a in args:
        if a in NAMED:
            out.append((a, *NAMED[a]))
            continue
        name, _, rest = a.partition("=")
        old, sep, new = rest.partition("=>")
        if not sep:
            raise SystemExit(f"an edit is NAME=OLD=>NEW or one of {sorted(NAMED)}: {a!r}")
        out.append((name, old, new))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    name, seg_id, edits = argv[1], int(argv[2]), _edits(argv[3:])
    case = real_size_case(name, "cuda", 2, CAP)
    if case is None:
        raise SystemExit(f"no script of tests/realworld/scripts starts with {name!r}")
    path, fd, sets = case
    xs = sets[0]
    fusion_cache.clear()
    base = compile_fusion(fd, xs)
    src = base.segments[seg_id].cuda_source
    print(f"{path.stem}: segment {seg_id} ({base.segments[seg_id].scheduler}), launch {base.segments[seg_id].launch}")
    want = [o.clone() for o in base.run(xs)]
    runs: list[tuple[str, object]] = [("generated", base)]
    for label, old, new in edits:
        if old not in src:
            print(f"{label}: {old!r} is not in the kernel; skipped")
            continue
        edited = src.replace(old, new)
        fusion_cache.clear()
        cf = compile_fusion(fd, xs, options=Options(kernel_sources={seg_id: edited}))
        got = cf.run(xs)
        diff = max((float((g.double() - w.double()).abs().max()) if g.numel() else 0.0)
                   for g, w in zip(got, want))
        print(f"{label}: {src.count(old)} replaced; largest difference from the generated kernel's outputs {diff:.3g}")
        runs.append((label, cf))
    runs.append(("generated again", base))
    for label, cf in runs:
        t = time_calls(lambda s, cf=cf: cf.run(s), sets)
        prof = next(p for p in cf.profile(xs, warmup=3, repeat=30) if p.name == cf.segments[seg_id].kernel_name)
        print(f"{label:24s} kernel {prof.time_ms * 1e3:9.1f} us (cf.profile, median of 30); "
              f"{t['median_ms'] * 1e3:9.1f} us a call (median of {t['reps']})")
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
