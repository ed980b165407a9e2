"""The Run tab's charts drawn with characters (rich Text): bars of eighths for time and
bandwidth, a log-log roofline on a character grid, a bar per run of the history."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text

from fusescope.render.charts import Bar, HistoryPoint, Roofline, fmt_gflops
from fusescope.render.graph import scheduler_color

EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, top: float, width: int) -> str:
    """`value` of `top` as a bar of eighths, `width` cells at most."""
    if top <= 0 or value <= 0:
        return ""
    full, part = divmod(round(min(value / top, 1.0) * width * 8), 8)
    return "█" * full + (EIGHTHS[part] if part else "")


def time_chart(bars: Sequence[Bar], width: int) -> Text:
    from fusescope.model import fmt_ms

    out = Text("Time per segment", style="bold")
    if not bars:
        return out.append("\n  no segments")
    label_w = max(len(b.label) for b in bars)
    sched_w = max(len(b.scheduler) for b in bars)
    bar_w = max(8, width - label_w - sched_w - 14)
    top = max((b.time_ms or 0.0) for b in bars)
    for b in bars:
        out.append(f"\n{b.label:<{label_w}} ")
        out.append(f"{b.scheduler:<{sched_w}} ", style=scheduler_color(b.scheduler))
        out.append(f"{bar(b.time_ms or 0.0, top, bar_w):<{bar_w}}", style="cyan")
        out.append(f" {fmt_ms(b.time_ms):>10}")
    if any(b.gbps is not None for b in bars):
        out.append("\n\nBandwidth per segment (of peak)", style="bold")
        bw_w = max(8, bar_w - 10)
        for b in bars:
            out.append(f"\n{b.label:<{label_w}} {b.scheduler:<{sched_w}} ")
            frac = b.peak_fraction or 0.0
            out.append(f"{bar(frac, 1.0, bw_w):<{bw_w}}", style="magenta")
            out.append(f" {b.gbps:>7.1f} GB/s {frac:>4.0%}" if b.gbps is not None else f" {'-':>7}")
    else:
        out.append("\nbandwidth: needs a GPU profile (d with p on)", style="dim")
    return out


def roofline_chart(r: Roofline | None, width: int, height: int = 12) -> Text:
    if r is None:
        return Text("Roofline: this run recorded no device ceilings", style="dim")
    out = Text(f"Roofline on {r.device}: {r.peak_gbps:.0f} GB/s, {fmt_gflops(r.peak_gflops)} FP32, "
               f"ridge at {r.ridge:.1f} FLOP/B", style="bold")
    cols = max(20, width - 10)
    (x0, x1), (y0, y1) = r.x_range(), r.y_range()
    lx0, lx1, ly0, ly1 = math.log10(x0), math.log10(x1), math.log10(y0), math.log10(y1)
    grid = [[" "] * cols for _ in range(height)]
    styles: dict[tuple[int, int], str] = {}

    def cell(x: float, y: float) -> tuple[int, int]:
        c = round((math.log10(x) - lx0) / (lx1 - lx0) * (cols - 1))
        row = height - 1 - round((math.log10(max(y, y0)) - ly0) / (ly1 - ly0) * (height - 1))
        return min(max(row, 0), height - 1), min(max(c, 0), cols - 1)

    for c in range(cols):
        x = 10 ** (lx0 + (lx1 - lx0) * c / (cols - 1))
        row, col = cell(x, r.roof(x))
        grid[row][col] = "─" if x >= r.ridge else "·"
    for k, p in enumerate(r.points):
        mark = str(k % 10)
        row, col = cell(p.intensity, p.achieved_gflops or p.attainable_gflops)
        grid[row][col] = mark
        styles[(row, col)] = f"bold {scheduler_color(p.scheduler)}"
    out.append("\n GFLOP/s", style="dim")
    step = (ly1 - ly0) / (height - 1)
    for row in range(height):
        ly = ly1 - step * row  # the row spans ly +- step/2: label it with the decade inside, if any
        decade = math.floor(ly + step / 2)
        label = _si(10.0 ** decade) if decade >= ly - step / 2 else ""
        out.append(f"\n{label:>8} │")
        for col, ch in enumerate(grid[row]):
            out.append(ch, style=styles.get((row, col), "dim" if ch in "·─" else ""))
    out.append("\n         └" + "─" * cols)
    out.append(f"\n          {_si(x0)} FLOP/B{_si(x1):>{cols - len(_si(x0)) - 7}}")
    for k, p in enumerate(r.points):
        achieved = f", achieved {fmt_gflops(p.achieved_gflops)}" if p.achieved_gflops else ""
        out.append(f"\n{k % 10} ", style=f"bold {scheduler_color(p.scheduler)}")
        out.append(f"{p.label} {p.scheduler}: {p.flops:,} FLOP / {p.bytes:,} B = {p.intensity:.3g} FLOP/B, "
                   f"{p.bound}-bound, roof {fmt_gflops(p.attainable_gflops)}{achieved}")
    if not any(p.achieved_gflops for p in r.points):
        out.append("\npoints sit on the roof: achieved FLOP/s need a GPU profile (d with p on)", style="dim")
    if r.skipped:
        out.append(f"\nnot plotted (no FLOPs or bytes): {', '.join(r.skipped)}", style="dim")
    return out


def history_chart(points: Sequence[HistoryPoint], width: int) -> Text:
    from fusescope.model import fmt_ms

    out = Text(f"Run history ({len(points)} run(s))", style="bold")
    if len(points) < 2:
        out.append("\n  a second run (after changing options) is compared here", style="dim")
    top = max((p.total_ms or 0.0) for p in points) if points else 0.0
    bar_w = max(8, min(40, width - 40))
    for p in points:
        out.append(f"\n{p.label:>4} {p.backend:<9} ")
        out.append(f"{bar(p.total_ms or 0.0, top, bar_w):<{bar_w}}", style="cyan" if p.status == "ok" else "red")
        out.append(f" {fmt_ms(p.total_ms):>10}  {p.options}")
    return out


def _si(v: float) -> str:
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"
