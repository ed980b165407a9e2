"""Size sweep: every real-world script (tests/realworld WORKS) and bundled sample, compiled again
at larger sizes that keep its shape patterns, to find what the small CI sizes hide.

    python scripts/size_sweep.py                        # compile every fusion at every scale
    python scripts/size_sweep.py --only rms_norm rope   # fusions whose names hold these
    python scripts/size_sweep.py --emulate              # also emulate the moderate scales
    python scripts/size_sweep.py --json sweep.json      # every record, for a later look

Scales (the script's real sizes where its `# real-sizes:` line names them; x4, x16, =4096
and an odd size per input dim size; then "model") and the rewrite of a script and its
inputs at a scale are scripts/scales.py's. A rewrite that does not keep the fusion
consistent is tried again mapping only exact values, then reported as unscalable, not as
an engine failure. No tensor exceeds --cap elements (default 64M): a larger scale is
skipped.

Reported: compile errors, fusions that run in more kernels than at the small size (with
the trace's reasons: failed to lower, is refused for, no scheduler accepts) and
refusals. --emulate runs the scales whose inputs hold at most --emulate-elems elements
(default 4M) on the g++ emulator and compares every output with the reference
evaluator, with tests/realworld's tolerances.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine import compile_fusion, fusion_cache, loads_fusion  # noqa: E402
from engine.errors import ExecutionError, FusionDefinitionError  # noqa: E402
from scripts.scales import (  # noqa: E402
    Scale,
    UnscalableError,
    first_line,
    input_values,
    real_scale,
    scaled_fusion,
    scales_for,
)

# Why a fusion ran in more kernels: trace messages that say so.
SPLIT_REASONS = ("failed to lower", "is refused for", "no scheduler accepts")

# ---- one compile --------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    scale: str
    status: str  # ok, split, error, unscalable, skipped, mismatch
    kernels: int = 0
    schedulers: list[str] = field(default_factory=list)
    detail: str = ""
    shapes: list[list[int]] = field(default_factory=list)
    seconds: float = 0.0


def compiled(fd: Any, xs: list[Any]) -> tuple[Any, int, list[str]]:
    fusion_cache.clear()
    cf = compile_fusion(fd, xs)
    return cf, sum(s.is_kernel for s in cf.segments), [s.scheduler for s in cf.segments]


def split_reasons(cf: Any) -> str:
    lines = [str(e) for e in cf.trace.events if any(r in e.message for r in SPLIT_REASONS)]
    return "\n".join(dict.fromkeys(lines))


def try_scale(name: str, path: Path, text: str, scale: Scale, base: tuple[int, list[str]],
              base_xs: list[Any], specs: list[Any], cap: int) -> tuple[Result, Any, list[Any]]:
    attempts = [scale, Scale(scale.label, scale.chosen, multiples=False)]
    why = ""
    for s in attempts:
        t = time.perf_counter()
        try:
            fd, xs = scaled_fusion(path, text, s, base_xs, specs, cap)
        except UnscalableError as e:
            why = str(e)
            if "over the cap" in why:
                return Result(name, scale.label, "skipped", detail=why), None, []
            continue
        shapes = [list(x.shape) for x in xs if isinstance(x, torch.Tensor)]
        try:
            cf, kernels, scheds = compiled(fd, xs)
        except (ExecutionError, FusionDefinitionError) as e:
            why = first_line(e)  # the new sizes do not fit the fusion's own constants
            continue
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            detail = "".join(traceback.format_exception_only(e)).strip()
            return Result(name, scale.label, "error", detail=detail, shapes=shapes,
                          seconds=time.perf_counter() - t), None, []
        status = "split" if kernels > base[0] else "ok"
        detail = split_reasons(cf) if status == "split" else ""
        if s.multiples != scale.multiples:
            detail = ("(exact values only) " + detail).strip()
        return (Result(name, scale.label, status, kernels, scheds, detail, shapes, time.perf_counter() - t),
                (fd, cf), xs)
    return Result(name, scale.label, "unscalable", detail=why), None, []


# ---- emulation ----------------------------------------------------------------------------
def emulate_check(fd: Any, cf: Any, xs: list[Any]) -> str:
    """'' when every emulated output matches the reference; else what differs."""
    from engine.reference import evaluate
    from tests.realworld.test_realworld import _close

    outs = cf.run(xs, backend="emulate")
    refs = evaluate(fd.fusion, xs)
    bad = []
    for k, (o, r) in enumerate(zip(outs, refs)):
        try:
            _close(o, r)
        except AssertionError as e:
            bad.append(f"output {k}: {str(e).strip().splitlines()[0]}")
    return "; ".join(bad)


# ---- the sweep ----------------------------------------------------------------------------
def fusion_files() -> Iterator[tuple[str, Path]]:
    from tests.realworld.test_realworld import SCRIPTS, WORKS

    for n in WORKS:
        yield f"realworld/{n}", SCRIPTS / f"{n}.py"
    for p in sorted((ROOT / "sample_fusions").glob("*.py")):
        yield f"sample/{p.stem}", p


def sweep_one(name: str, path: Path, a: argparse.Namespace, report: Callable[[Result], None]) -> None:
    text = path.read_text()
    try:
        fd0 = loads_fusion(text, filename=str(path))
        xs0 = fd0.example_inputs(device="cpu", seed=0)
        _, k0, s0 = compiled(fd0, xs0)
    except Exception as e:  # noqa: BLE001
        report(Result(name, "base", "error", detail=first_line(e)))
        return
    report(Result(name, "base", "ok", k0, s0))
    values, inner = input_values(xs0)
    specs = fd0.input_specs or [None] * len(xs0)
    try:
        real = real_scale(text)
    except ValueError as e:
        report(Result(name, "real", "error", detail=str(e)))
        real = None
    for scale in ([real] if real is not None else []) + scales_for(values, inner):
        if a.scales and not any(s in scale.label for s in a.scales):
            continue
        r, got, xs = try_scale(name, path, text, scale, (k0, s0), xs0, specs, a.cap)
        if got is not None and a.emulate and sum(x.numel() for x in xs if isinstance(x, torch.Tensor)) \
                <= a.emulate_elems:
            fd, cf = got
            try:
                bad = emulate_check(fd, cf, xs)
            except Exception as e:  # noqa: BLE001
                bad = "run failed: " + first_line(e)
            r.status = "mismatch" if bad else r.status + "+emulated"
            r.detail = (r.detail + "\n" + bad).strip()
        report(r)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=[], help="substrings of the fusion names to sweep")
    ap.add_argument("--scales", nargs="*", default=[], help="substrings of the scale labels to run")
    ap.add_argument("--cap", type=int, default=64 << 20, help="most elements of one input tensor")
    ap.add_argument("--emulate", action="store_true", help="emulate the scales small enough (--emulate-elems)")
    ap.add_argument("--emulate-elems", type=int, default=4 << 20, help="most input elements of an emulated run")
    ap.add_argument("--json", type=Path, help="write every record here")
    ap.add_argument("-q", "--quiet", action="store_true", help="print findings only")
    a = ap.parse_args(argv)
    records: list[Result] = []

    def report(r: Result) -> None:
        records.append(r)
        finding = r.status in ("error", "split", "mismatch")
        if finding or not a.quiet:
            kernels = f" kernels={r.kernels}" if r.kernels else ""
            print(f"{r.status.upper():11s} {r.name} @ {r.scale}{kernels} {r.shapes if finding else ''}".rstrip())
            if r.detail and (finding or r.status == "unscalable"):
                print("    " + r.detail.replace("\n", "\n    ")[:1500])
        sys.stdout.flush()

    start = time.perf_counter()
    try:
        for name, path in fusion_files():
            if a.only and not any(s in name for s in a.only):
                continue
            sweep_one(name, path, a, report)
    finally:
        if a.json:
            a.json.write_text(json.dumps([r.__dict__ for r in records], indent=1))
    counts: dict[str, int] = {}
    for r in records:
        counts[r.status] = counts.get(r.status, 0) + 1
    print(f"{len(records)} compiles in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if any(r.status in ("error", "split", "mismatch") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
