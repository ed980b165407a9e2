"""Judging an output that differs from the reference against the fusion computed in float64.

Two correct computations of a fusion in narrow types may differ by far more than their
output type's tolerance: a float32 reduction summed in another order rounds its last bit
otherwise, which flips a bf16 value downstream now and then, and a sum of nearly cancelling
terms (RoPE's q * cos + rotate_half(q) * sin) turns one ulp of its terms into many ulps of
its result. Neither the engine nor the reference is then "right": both are judged against the
fusion evaluated with every float, bf16 and half value kept in float64 (its casts between those
types round nothing), the closest thing to the exact result.

An element is explained by rounding when the engine's value is no further from the float64
value than the reference's is, give or take what rounding-sized changes of the intermediate
values move it (rounding_spread: SPREAD_SAMPLES runs of the float64 copy where every value an
op makes is moved by its original type's unit roundoff, up or down at random, seeded) and a
couple of ulps of the output type. Used by the fuzz harness (and through it the GPU tests) and
by the real-world scripts' emulator test, for the elements their tolerance rejects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from engine.dtypes import DataType


@dataclass
class Spread:
    """One output computed in float64 (`wide`), and again with rounding-sized changes of every
    intermediate value (`samples`)."""

    wide: Any
    samples: list[Any]

    def moved(self) -> torch.Tensor:
        """How far the rounding-sized changes moved each element (float64)."""
        w = self.wide.double()
        return torch.stack([(t.double() - w).abs() for t in self.samples]).amax(0)


# Unit roundoff (half an ulp, relative) of the types whose values rounding_spread moves.
UNIT_ROUNDOFF = {DataType.Float: 2.0**-24, DataType.BFloat16: 2.0**-8, DataType.Half: 2.0**-11}
SPREAD_SAMPLES = 4
# The engine's own rounding (its libm and the reference's differ by an ulp or two, and by
# more where torch's vectorized CPU kernels approximate, e.g. gelu's erf) may exceed one
# sample's: a few times the largest move seen still bounds it.
SPREAD_MARGIN = 4.0
# Ulps of the output type always allowed beyond the reference's distance from float64.
SLACK_ULPS = 2.0


def rounding_spread(fusion: Any, xs: list[Any]) -> list[Spread] | None:
    """How far rounding alone moves each output of `fusion`: its outputs computed in float64
    (a widened copy) and SPREAD_SAMPLES more runs of that copy with every value an op makes
    moved by its original type's unit roundoff. Where the outputs are well conditioned all of
    these agree to a few ulps; where they are not (fmod by a tiny computed divisor, whose
    quotient multiplies the divisor's last-bit error; a comparison of nearly equal computed
    values; a cancelling sum) they spread, and no fixed tolerance can decide between the
    engine and the reference. None where the widened copy cannot be evaluated."""
    from engine.reference import evaluate

    wide, val_map = fusion.clone()
    unit: dict[Any, float] = {}
    for v, w in val_map.items():
        if getattr(v, "dtype", None) in UNIT_ROUNDOFF:
            unit[w] = UNIT_ROUNDOFF[v.dtype]
            w.dtype = DataType.Double
    narrow = (torch.float32, torch.bfloat16, torch.float16)
    wide_xs = [x.double() if isinstance(x, torch.Tensor) and x.dtype in narrow else x for x in xs]
    gen = torch.Generator().manual_seed(0)

    def nudge(expr: Any, outs: list[Any]) -> list[Any]:
        moved = []
        for v, t in zip(expr.outputs, outs):
            u = unit.get(v)
            if u is not None and isinstance(t, torch.Tensor) and t.dtype == torch.float64 and t.numel():
                sign = torch.randint(0, 2, t.shape, generator=gen).to(t.device, torch.float64) * 2 - 1
                t = t * (1 + sign * u)
            moved.append(t)
        return moved

    try:
        wide_outs = evaluate(wide, wide_xs)
        samples = [evaluate(wide, wide_xs, after=nudge) for _ in range(SPREAD_SAMPLES)]
    except Exception:  # noqa: BLE001 - only a second opinion: without it the comparison stands
        return None
    return [Spread(w, [s[k] for s in samples]) for k, w in enumerate(wide_outs)]


def ulp(dtype: torch.dtype, magnitude: torch.Tensor) -> torch.Tensor:
    """The spacing of `dtype`'s values at each `magnitude` (float64; normal numbers)."""
    info = torch.finfo(dtype)
    m = magnitude.double().abs().clamp(min=info.tiny)
    return torch.exp2(torch.floor(torch.log2(m))) * info.eps


def explained_by_rounding(out: torch.Tensor, ref: torch.Tensor, spread: Spread) -> torch.Tensor:
    """Per element: the engine's `out` is no further from the float64 value than the
    reference's `ref` is, plus SPREAD_MARGIN times what rounding-sized changes move it and
    SLACK_ULPS ulps of the output type. Finite values only: an overflow of the narrow type is
    no rounding question."""
    o, r, w = out.double(), ref.double(), spread.wide.double().to(out.device)
    slack = (r - w).abs() + SPREAD_MARGIN * spread.moved().to(out.device) + SLACK_ULPS * ulp(out.dtype, w)
    return torch.isfinite(o) & torch.isfinite(r) & torch.isfinite(slack) & ((o - w).abs() <= slack)


# The widest type the engine and nvFuser compute floats in.
COMPUTE_MAX = torch.finfo(torch.float32).max


def beyond_compute_range(out: torch.Tensor, ref: torch.Tensor, spread: Spread) -> torch.Tensor:
    """Per element: the float64 value is beyond float's range and both the engine and the
    reference give a value no float computation reaches (inf or NaN). Whether an overflow
    ends as inf or NaN depends on the order of the ops after it (inf - inf), which neither
    computation is bound to: random SDPA-backward inputs at head dim 128 give scores of 1e46."""
    w = spread.wide.double().to(out.device)
    return (w.abs() > COMPUTE_MAX) & ~torch.isfinite(out.double()) & ~torch.isfinite(ref.double())
