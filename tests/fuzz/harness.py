"""Run one generated case through the whole pipeline and classify what happened.

compile_fusion (segment, schedule, lower, render), then the emulate back end (g++) against
the reference evaluator, and optionally an nvcc compile check of every kernel. Outcomes:

- pass: every output matches the reference;
- refused: the engine raised one of its own errors saying what it does not support (counted
  by category: the error type and its message with names and numbers blanked);
- mismatch: an output differs from the reference beyond its dtype's tolerance and, where
  rounding alone moves it further (an ill-conditioned output), beyond that (rounding_spread);
- crash: any other exception (IndexError, KeyError, AssertionError, ...), an ExecutionError
  from a kernel, a refusal that names no tensor or axis (schedules only), or a dead process.
"""

from __future__ import annotations

import re
import shutil
import traceback
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.errors import CompileError, FusionDefinitionError, ScheduleError
from tests.rounding import SPREAD_MARGIN, Spread, explained_by_rounding, rounding_spread

__all__ = ["REFUSALS", "Outcome", "Spread", "category", "crash", "mismatch_reason", "nvcc_check", "rounding_spread",
           "run_compiled"]

REFUSALS = (CompileError, ScheduleError, FusionDefinitionError)


@dataclass
class Outcome:
    kind: str  # pass | refused | mismatch | crash
    category: str = ""
    detail: str = ""
    segments: int = 0
    kernels: int = 0
    stats: dict[str, int] = field(default_factory=dict)


def category(e: BaseException) -> str:
    """The error type and its first line with tensor names and numbers blanked: a refusal
    category that groups the same refusal of different fusions."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    msg = re.sub(r"\b[TS]\d+\b", "T#", msg)
    msg = re.sub(r"\b(iS|iB|bS|rS|iblockIdx|ithreadIdx|[a-z]+)\d+\{[^}]*\}", "ID", msg)
    msg = re.sub(r"-?\d+(\.\d+)?", "N", msg)
    return f"{type(e).__name__}: {msg[:110]}"


def crash(e: BaseException, where: str) -> Outcome:
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-8:])
    return Outcome("crash", f"{where}: {type(e).__name__}", f"{where}: {type(e).__name__}: {e}\n{tb}")


_BYTE_EXACT = tuple(getattr(torch, n) for n in ("float4_e2m1fn_x2", "float8_e8m0fnu") if hasattr(torch, n))


def mismatch_reason(out: Any, ref: Any, spread: Spread | None = None) -> str | None:
    """Why `out` differs from `ref` (None when they match within the dtype's tolerance).

    With `spread` (tests.rounding.rounding_spread's, for this output) an element also matches
    where rounding alone moves it further than the tolerance: `out` may then be as far from
    `ref` as `ref` is from the float64 result plus what last-place changes of the
    intermediate values do to it, or no further from the float64 result than `ref` is, by
    that much (explained_by_rounding) (integers and booleans: any value those runs gave)."""
    if not isinstance(ref, torch.Tensor):
        return None if out == ref else f"{out!r} != {ref!r}"
    if not isinstance(out, torch.Tensor):
        return f"a {type(out).__name__} where the reference has a tensor"
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return f"shape/dtype {tuple(out.shape)} {out.dtype} != reference {tuple(ref.shape)} {ref.dtype}"
    if out.numel() == 0:
        return None
    if out.device != ref.device:  # a fusion without tensor inputs: the reference ran on the CPU
        out = out.to(ref.device)
    if spread is not None and any(not isinstance(t, torch.Tensor) or t.shape != ref.shape
                                  for t in (spread.wide, *spread.samples)):
        spread = None
    if out.dtype in _BYTE_EXACT:
        # torch has no arithmetic (and no cast, on the GPU a device-side assert) for these:
        # compared as the bytes the quantization must reproduce exactly.
        bad = out.view(torch.uint8) != ref.view(torch.uint8)
        if not bad.any():
            return None
        return f"{int(bad.sum())} of {bad.numel()} bytes differ"
    if not out.dtype.is_floating_point:
        bad = out != ref
        for t in (spread.wide, *spread.samples) if spread is not None else ():
            bad &= out != t.to(out.dtype)
        if not bad.any():
            return None
        k = int(bad.flatten().nonzero()[0])
        return f"{int(bad.sum())} of {out.numel()} differ, e.g. flat {k}: {out.flatten()[k]} != {ref.flatten()[k]}"
    o, r = out.double(), ref.double()
    tol = 1e-5 if out.dtype in (torch.float32, torch.float64) else 2e-2
    scale = max(1.0, float(r[torch.isfinite(r)].abs().max()) if torch.isfinite(r).any() else 1.0)
    same = torch.isclose(o, r, rtol=tol, atol=tol * scale, equal_nan=True)
    if spread is not None and not bool(same.all()):
        w = spread.wide.double()
        slack = (r - w).abs() + SPREAD_MARGIN * spread.moved() + tol * (r.abs() + scale)
        # Finite values only: an overflow of the narrow type is no rounding question.
        same |= torch.isfinite(o) & torch.isfinite(r) & torch.isfinite(slack) & ((o - r).abs() <= slack)
        same |= explained_by_rounding(out, ref, spread)
    if bool(same.all()):
        return None
    k = int((~same).flatten().nonzero()[0])
    return (f"{int((~same).sum())} of {out.numel()} differ beyond rtol={tol}, "
            f"e.g. flat {k}: {o.flatten()[k].item()} != {r.flatten()[k].item()}")


def nvcc_check(cf: Any) -> None:
    from engine.runtime.nvcc import ptx_check

    for seg in cf.segments:
        if seg.cuda_source:
            ptx_check(seg.cuda_source, "sm_80")


def run_compiled(fd: Any, xs: list[Any], nvcc: bool = False, backend: str = "emulate") -> Outcome:
    """Compile, emulate (or run on `backend`) and compare one defined fusion (a generated one
    or a loaded file)."""
    from engine.compile import compile_fusion
    from engine.reference import evaluate

    try:
        refs = evaluate(fd.fusion, xs)
    except Exception as e:  # noqa: BLE001 - the reference must run every definable fusion
        return crash(e, "reference")
    try:
        cf = compile_fusion(fd, xs)
    except REFUSALS as e:
        return Outcome("refused", category(e), str(e))
    except Exception as e:  # noqa: BLE001
        return crash(e, "compile")
    segs = len(cf.segments)
    kernels = sum(1 for s in cf.segments if s.cuda_source)
    try:
        if nvcc and shutil.which("nvcc"):
            nvcc_check(cf)
        outs = cf.run(xs, backend=backend)
    except Exception as e:  # noqa: BLE001 - a kernel that fails to build or faults is a bug
        out = crash(e, backend)
        out.segments, out.kernels = segs, kernels
        return out
    spreads: list[Spread] | None = None
    for k, (o, r) in enumerate(zip(outs, refs)):
        why = mismatch_reason(o, r)
        if why is not None:
            spreads = rounding_spread(fd.fusion, xs) if spreads is None else spreads
            if spreads is not None and len(spreads) == len(refs):
                why = mismatch_reason(o, r, spreads[k])
        if why is not None:
            return Outcome("mismatch", "output", f"output {k}: {why}", segs, kernels)
    if len(outs) != len(refs):
        return Outcome("mismatch", "output count", f"{len(outs)} outputs, reference {len(refs)}", segs, kernels)
    return Outcome("pass", "", "", segs, kernels)
