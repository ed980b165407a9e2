"""ptxas check: every generated kernel of the corpus, compiled by nvcc for sm_90, at the
fusion's own sizes and at larger ones; reports registers, stack frame, spills, local and
shared memory per kernel, the worst first.

    python scripts/ptxas_check.py                       # own sizes, "model" and x16 scales, real sizes
    python scripts/ptxas_check.py --only rms_norm       # fusions whose names hold these
    python scripts/ptxas_check.py --scales own real     # scale labels holding these
    python scripts/ptxas_check.py --all --json out.json # every kernel, and every record

A kernel with local memory (a stack frame: per-thread arrays ptxas could not keep in registers,
or spills) is a bug: a persistent buffer must live in registers or shared memory, split across
the threads. The exit status is 1 when a kernel has more local memory per thread than --limit
(default 0 bytes) and no entry of EXPLAINED says why it may (a hand-written fd.sched schedule,
libdevice's trig range reduction); the report lists those apart, under their reason.

Fusions: the real-world scripts and samples of scripts/size_sweep.py's fusion_files() and the
regression fusions (tests/regressions/fusions). Scales: scripts/scales.py's rewriting (the
script's text, ast, never run): "real" the sizes of the model a script comes from (its
`# real-sizes:` line), "model" makes the largest size 4096, "NxN16" multiplies one size by 16.
Inputs at a new
scale are meta tensors (shapes, strides and dtypes are all a compile needs); --cap bounds the
elements of one input all the same, since the segmenter evaluates some ops (random numbers)
with data, and --max-memory bounds the address space, so that such a compile fails alone.
nvcc runs in --jobs worker threads (at most 2) beside the engine's compiles; results are
cached on disk (engine.runtime.ptxas).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine import compile_fusion, fusion_cache, loads_fusion  # noqa: E402
from engine.errors import CompileError, ExecutionError, FusionDefinitionError, FusionFileError  # noqa: E402
from engine.runtime.ptxas import ResourceUsage, ptxas_usage  # noqa: E402
from scripts.scales import (  # noqa: E402
    Scale,
    UnscalableError,
    _strides_like,
    input_values,
    real_scale,
    remake,
    rewrite,
    scales_for,
)
from scripts.size_sweep import fusion_files  # noqa: E402

REGRESSIONS = ROOT / "tests" / "regressions" / "fusions"

# Kernels allowed local memory, by a property of the kernel (its scheduler, its source and
# what ptxas reports), and why: (test, explanation).
_TRIG = re.compile(r"\b(?:sin|cos|tan|sinf|cosf|tanf|sincos|sincosf|fsRng<(?:float|double)>)\(")
TRIG_FRAME = 80  # bytes: two reductions' arrays, float's (28) and double's (40)


def _user_schedule(row: KernelRow) -> bool:
    return row.scheduler == "user"


def _trig_range_reduction(row: KernelRow) -> bool:
    u = row.usage
    return (u is not None and not u.spill_stores and u.local_bytes <= TRIG_FRAME
            and bool(_TRIG.search(row.body)))


EXPLAINED: list[tuple[Callable[[KernelRow], bool], str]] = [
    (_user_schedule, "a hand-written schedule (fd.sched): its tensors are inlined and parallelized as the "
                     "script says, not by a scheduler (nvFuser compiles the same kernel)"),
    (_trig_range_reduction, "libdevice's accurate sin/cos/tan (RoPE angles, Box-Muller in the RNG) keep the "
                            "Payne-Hanek range reduction's array on the stack (28 bytes float, 40 double), "
                            "touched only by its slow path for huge arguments (|x| > 105615 in float); fast "
                            "math would change results"),
]

DEFAULT_SCALES = ("own", "real", "model", "x16")
# Most elements of one input made with values, when a compile needs them (not meta tensors).
DATA_CAP = 64 << 20


@dataclass
class KernelRow:
    fusion: str
    scale: str
    segment: int
    scheduler: str
    launch: str
    dynamic_smem: int
    usage: ResourceUsage | None = None
    error: str = ""
    body: str = ""  # the kernel's own source, after the runtime headers

    @property
    def where(self) -> str:
        return f"{self.fusion} @ {self.scale} #{self.segment}"

    @property
    def explanation(self) -> str:
        return next((why for test, why in EXPLAINED if test(self)), "")

    def worst_key(self) -> tuple[int, int, int]:
        u = self.usage
        if u is None:
            return (1 << 40, 0, 0)  # a kernel that did not compile comes first
        return (u.local_bytes, u.spill_stores + u.spill_loads, u.registers)


@dataclass
class Tally:
    compiled: int = 0
    unscalable: int = 0
    failed: list[str] = field(default_factory=list)


def all_fusions() -> Iterator[tuple[str, Path]]:
    yield from fusion_files()
    for p in sorted(REGRESSIONS.glob("*.py")):
        if "# expect refused" not in p.read_text():
            yield f"regression/{p.stem}", p


def meta_inputs(xs: list[Any], specs: list[Any], scale: Scale, cap: int) -> list[Any]:
    """The inputs at `scale`: tensors whose sizes change become meta tensors with the same
    dtype and stride order (stride-0 and size-0/1 dims kept); the rest stay as they are."""
    out: list[Any] = []
    for x, spec in zip(xs, specs):
        if not isinstance(x, torch.Tensor):
            out.append(scale(x) if type(x) is int and x in scale.chosen else x)
            continue
        shape = tuple(scale(n) for n in x.shape)
        if shape == tuple(x.shape):
            out.append(x)
            continue
        if spec is not None and spec.kind == "tensor":
            raise UnscalableError("a data tensor (torch.tensor) would change size")
        n = 1
        for s in shape:
            n *= s
        if n > cap:
            raise UnscalableError(f"{list(shape)} is over the cap")
        out.append(torch.empty_strided(shape, _strides_like(x, shape), dtype=x.dtype, device="meta"))
    return out


def scales_of(text: str, xs: list[Any], wanted: list[str]) -> list[Scale]:
    """The fusion's own size, its real sizes (its `# real-sizes:` line), then size_sweep's
    scales; those whose labels hold one of `wanted`."""
    values, inner = input_values(xs)
    out = [Scale("own", {})]
    real = real_scale(text)
    if real is not None:
        out.append(real)
    out += scales_for(values, inner)
    return [s for s in out if any(w in s.label for w in wanted)]


def compile_at(path: Path, text: str, xs0: list[Any], specs: list[Any], scale: Scale,
               cap: int) -> Any:
    """The compiled fusion at `scale` (mapping products of sizes too, else exact sizes only)."""
    if not scale.chosen:
        fusion_cache.clear()
        return compile_fusion(loads_fusion(text, filename=str(path)), xs0)
    why = ""
    for s in (scale, Scale(scale.label, scale.chosen, multiples=False)):
        try:
            fd = loads_fusion(rewrite(text, s), filename=f"{path.stem}@{s.label}")
            xs = meta_inputs(xs0, specs, s, cap)
            fusion_cache.clear()
            try:
                return compile_fusion(fd, xs)
            except NotImplementedError as e:
                if "meta" not in str(e):
                    raise
            # an op that needs values at compile time (a data-dependent one): real inputs
            gen = torch.Generator().manual_seed(0)
            xs = [remake(x, spec, s, DATA_CAP, gen) for x, spec in zip(xs0, specs)]
            fusion_cache.clear()
            return compile_fusion(fd, xs)
        except (FusionFileError, FusionDefinitionError, ExecutionError, UnscalableError) as e:
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if "over the cap" in why:
                break
        except CompileError as e:
            if ".sched." not in text:
                raise
            # A hand-written schedule's split factors and thread counts are the script's,
            # written for its own sizes.
            why = "hand-written schedule: " + (str(e).strip().splitlines() or [""])[0]
            break
    raise UnscalableError(why)


def check_fusion(name: str, path: Path, wanted: list[str], cap: int, pool: ThreadPoolExecutor,
                 tally: Tally) -> list[tuple[KernelRow, Future[list[ResourceUsage]] | None]]:
    """Compile `name` at each wanted scale; nvcc jobs are queued on `pool`."""
    text = path.read_text()
    try:
        fd0 = loads_fusion(text, filename=str(path))
        xs0 = fd0.example_inputs(device="cpu", seed=0)
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        tally.failed.append(f"{name}: {type(e).__name__}: {e}".splitlines()[0])
        return []
    specs = fd0.input_specs or [None] * len(xs0)
    jobs: list[tuple[KernelRow, Future[list[ResourceUsage]] | None]] = []
    for scale in scales_of(text, xs0, wanted):
        try:
            cf = compile_at(path, text, xs0, specs, scale, cap)
        except UnscalableError:
            tally.unscalable += 1
            continue
        except Exception as e:  # noqa: BLE001
            tally.failed.append(f"{name} @ {scale.label}: {type(e).__name__}: {e}".splitlines()[0])
            continue
        tally.compiled += 1
        for seg in cf.segments:
            if not seg.is_kernel:
                continue
            la = seg.launch
            launch = (f"grid {la.grid[0]}x{la.grid[1]}x{la.grid[2]} block {la.block[0]}x{la.block[1]}x{la.block[2]}"
                      if la is not None else "")
            src = seg.cuda_source
            body = src[src.rfind('extern "C" __global__'):]
            row = KernelRow(name, scale.label, seg.id, seg.scheduler, launch,
                            la.shared_mem_bytes if la is not None else 0, body=body)
            jobs.append((row, pool.submit(ptxas_usage, seg.cuda_source)))
    return jobs


def finish(jobs: list[tuple[KernelRow, Future[list[ResourceUsage]] | None]]) -> list[KernelRow]:
    rows = []
    for row, fut in jobs:
        try:
            usage = fut.result() if fut is not None else []
            row.usage = usage[0] if usage else None
            if row.usage is None:
                row.error = "ptxas reported no entry function"
        except Exception as e:  # noqa: BLE001
            row.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        rows.append(row)
    return rows


def table(rows: list[KernelRow]) -> str:
    head = (f"{'local':>7} {'stack':>7} {'spill st/ld':>13} {'regs':>4} {'smem s+d':>13}  "
            f"{'kernel':<70} {'scheduler':<22} launch")
    lines = [head]
    for r in sorted(rows, key=KernelRow.worst_key, reverse=True):
        u = r.usage
        if u is None:
            lines.append(f"{'?':>7} {'':>7} {'':>13} {'':>4} {'':>13}  {r.where:<70} {r.scheduler:<22} {r.error}")
            continue
        lines.append(f"{u.local_bytes:>7} {u.stack_frame:>7} {f'{u.spill_stores}/{u.spill_loads}':>13} "
                     f"{u.registers:>4} {f'{u.smem}+{r.dynamic_smem}':>13}  {r.where:<70} "
                     f"{r.scheduler:<22} {r.launch}")
    return "\n".join(lines)


def report(rows: list[KernelRow], top: int, limit: int) -> str:
    """Kernels over `limit` bytes of local memory that nothing explains (or that did not
    compile), worst first; then each explained group under its reason; then the `top` largest
    register users of the rest."""
    local = [r for r in rows if r.usage is None or r.usage.local_bytes > limit]
    bad = [r for r in local if not r.explanation]
    out = [f"kernels with local memory, unexplained: {len(bad)}", table(bad)]
    for _, why in EXPLAINED:
        group = [r for r in local if r.explanation == why]
        if group:
            out += ["", f"explained ({len(group)}): {why}", table(group)]
    rest = sorted((r for r in rows if r not in local), key=KernelRow.worst_key, reverse=True)
    if top and rest:
        out += ["", f"without local memory, the most registers first ({min(top, len(rest))} of {len(rest)}):",
                table(rest[:top])]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=[], help="substrings of the fusion names to check")
    ap.add_argument("--scales", nargs="*", default=list(DEFAULT_SCALES), help="substrings of scale labels")
    ap.add_argument("--cap", type=int, default=1 << 27, help="most elements of one input tensor")
    ap.add_argument("--max-memory", type=float, default=8.0,
                    help="GiB of address space (a compile evaluating a large RNG op fails, not the host)")
    ap.add_argument("--jobs", type=int, default=1, choices=(1, 2), help="nvcc compiles at once")
    ap.add_argument("--limit", type=int, default=0, help="local bytes per thread a kernel may have")
    ap.add_argument("--all", action="store_true", help="list every kernel, not only those with local memory")
    ap.add_argument("--top", type=int, default=15, help="without --all: this many of the others")
    ap.add_argument("--json", type=Path, help="write every kernel's record here")
    a = ap.parse_args(argv)
    limit = int(a.max_memory * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    start = time.perf_counter()
    tally = Tally()
    rows: list[KernelRow] = []
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for name, path in all_fusions():
            if a.only and not any(s in name for s in a.only):
                continue
            rows += finish(check_fusion(name, path, a.scales, a.cap, pool, tally))
            print(f"... {name}: {len(rows)} kernels so far", file=sys.stderr, flush=True)
    print(f"{len(rows)} kernels of {tally.compiled} compiles ({tally.unscalable} scales unscalable) "
          f"in {time.perf_counter() - start:.0f} s")
    print(report(rows, len(rows) if a.all else a.top, a.limit))
    for f in tally.failed:
        print("FAILED " + f)
    if a.json:
        a.json.write_text(json.dumps([{**{k: v for k, v in r.__dict__.items() if k not in ("usage", "body")},
                                       "explained": r.explanation,
                                       **(r.usage.to_json() if r.usage else {})} for r in rows], indent=1))
    bad = [r for r in rows if (r.usage is None or r.usage.local_bytes > a.limit) and not r.explanation]
    return 1 if bad or tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
