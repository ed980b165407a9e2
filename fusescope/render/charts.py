"""The data of the Run tab's charts, taken from recorded runs (model.RunResult) and nothing else:
a bar per segment (time, bandwidth), a roofline (each segment's FLOPs per byte against the
ceilings of the device its kernels were made for) and the history of runs. The text and SVG
renderers (fusescope.render.chart_text, chart_svg) draw these and add nothing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from fusescope.model import RunResult

CHARTS = ("time", "roofline", "history")


@dataclass(frozen=True)
class Bar:
    label: str  # "g3"
    scheduler: str
    time_ms: float | None
    gbps: float | None  # GPU profile only
    peak_fraction: float | None


@dataclass(frozen=True)
class RooflinePoint:
    label: str
    scheduler: str
    flops: int
    bytes: int
    intensity: float  # FLOP per byte
    attainable_gflops: float  # the roof at this intensity
    achieved_gflops: float | None  # from a GPU profile's time; None otherwise
    bound: Literal["memory", "compute"]


@dataclass(frozen=True)
class Roofline:
    device: str
    peak_gbps: float
    peak_gflops: float
    points: tuple[RooflinePoint, ...]
    skipped: tuple[str, ...]  # segments without FLOPs or bytes (no point to plot)

    @property
    def ridge(self) -> float:
        """FLOP/byte where the bandwidth roof meets the compute ceiling."""
        return self.peak_gflops / self.peak_gbps

    def roof(self, intensity: float) -> float:
        return min(self.peak_gflops, self.peak_gbps * intensity)

    def x_range(self) -> tuple[float, float]:
        """Log-scale bounds (FLOP/byte) that hold every point and the ridge, a decade either side."""
        xs = [p.intensity for p in self.points if p.intensity > 0] + [self.ridge]
        return 10 ** math.floor(math.log10(min(xs)) - 1), 10 ** math.ceil(math.log10(max(xs)) + 1)

    def y_range(self) -> tuple[float, float]:
        ys = [self.peak_gflops, *(p.attainable_gflops for p in self.points if p.attainable_gflops > 0),
              *(p.achieved_gflops for p in self.points if p.achieved_gflops)]
        lo = min(ys + [self.roof(self.x_range()[0])])
        return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(self.peak_gflops) + 0.3)


@dataclass(frozen=True)
class HistoryPoint:
    label: str  # "#3"
    backend: str
    status: str
    total_ms: float | None
    segments: int
    options: str


def time_bars(run: RunResult) -> list[Bar]:
    return [Bar(f"g{s.segment}", s.scheduler, s.time_ms, s.gbps, s.peak_fraction) for s in run.segments]


def roofline(run: RunResult) -> Roofline | None:
    """None when the run recorded no device ceilings (a failed run, an older bundle)."""
    if not run.peak_gbps or not run.peak_gflops:
        return None
    points, skipped = [], []
    for s in run.segments:
        if not s.flops or not s.bytes:
            skipped.append(f"g{s.segment}")
            continue
        intensity = s.flops / s.bytes
        roof = min(run.peak_gflops, run.peak_gbps * intensity)
        bound: Literal["memory", "compute"] = "memory" if roof < run.peak_gflops else "compute"
        points.append(RooflinePoint(f"g{s.segment}", s.scheduler, s.flops, s.bytes, intensity, roof,
                                    s.gflops, bound))
    return Roofline(run.ceiling_device, run.peak_gbps, run.peak_gflops, tuple(points), tuple(skipped))


def history(runs: Sequence[RunResult]) -> list[HistoryPoint]:
    return [HistoryPoint(f"#{k}", r.backend, r.status, r.total_ms, len(r.segments), r.options.describe())
            for k, r in enumerate(runs, start=1)]


def fmt_gflops(v: float) -> str:
    return f"{v / 1000:.1f} TFLOP/s" if v >= 1000 else f"{v:.3g} GFLOP/s"
