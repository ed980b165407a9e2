"""The Run tab's charts as standalone SVG (what `fusescope export --chart` writes): the same
data as the terminal charts (fusescope.render.charts), drawn with rects, lines and text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from fusescope.render.charts import Bar, HistoryPoint, Roofline, fmt_gflops
from fusescope.render.graph import scheduler_color

if TYPE_CHECKING:
    from fusescope.model import RunResult

FONT = 'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12"'


def _doc(width: int, height: int, title: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">\n<title>{escape(title)}</title>\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n'
            f'<text x="10" y="20" {FONT} font-weight="bold">{escape(title)}</text>\n'
            + "\n".join(body) + "\n</svg>\n")


def _text(x: float, y: float, s: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" {FONT} text-anchor="{anchor}"{extra}>{escape(s)}</text>'


def time_svg(bars: Sequence[Bar], title: str, timing: str = "") -> str:
    """A bar per segment: time, and GB/s against peak where the run has a GPU profile."""
    from fusescope.model import fmt_ms

    row_h, left, bar_w = 22, 230, 360
    has_bw = any(b.gbps is not None for b in bars)
    width = max(left + bar_w + 110 + (bar_w + 150 if has_bw else 0), left + 8 * len(timing) + 60)
    top = max((b.time_ms or 0.0) for b in bars) if bars else 0.0
    body = [_text(left, 44, f"time: {timing}" if timing else "time"), *([_text(left + bar_w + 110, 44, "bandwidth (of peak)")] if has_bw else [])]
    for k, b in enumerate(bars):
        y = 56 + k * row_h
        body.append(f'<g class="segment" data-segment="{escape(b.label)}">')
        body.append(_text(10, y + 14, f"{b.label} {b.scheduler}"))
        w = bar_w * (b.time_ms or 0.0) / top if top > 0 else 0.0
        body.append(f'<rect class="time" x="{left}" y="{y}" width="{w:.2f}" height="{row_h - 6}" '
                    f'fill="{scheduler_color(b.scheduler)}" stroke="#333" data-ms="{b.time_ms}"/>')
        body.append(_text(left + w + 6, y + 14, fmt_ms(b.time_ms)))
        if has_bw:
            x = left + bar_w + 110
            frac = min(b.peak_fraction or 0.0, 1.0)
            body.append(f'<rect x="{x}" y="{y}" width="{bar_w}" height="{row_h - 6}" fill="none" stroke="#bbb"/>')
            body.append(f'<rect class="gbps" x="{x}" y="{y}" width="{bar_w * frac:.2f}" height="{row_h - 6}" '
                        f'fill="#b388eb" data-gbps="{b.gbps}"/>')
            body.append(_text(x + bar_w + 6, y + 14, f"{b.gbps or 0.0:.1f} GB/s ({b.peak_fraction or 0.0:.0%})"))
        body.append("</g>")
    return _doc(width, 70 + len(bars) * row_h, title, body)


def roofline_svg(r: Roofline, title: str) -> str:
    """Log-log: FLOP/byte across, GFLOP/s up; the roof, and a point per segment (on the roof
    without a GPU profile, at its achieved FLOP/s with one)."""
    left, top, w, h = 80, 50, 560, 340
    (x0, x1), (y0, y1) = r.x_range(), r.y_range()

    def px(x: float) -> float:
        return left + (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * w

    def py(y: float) -> float:
        return top + h - (math.log10(max(y, y0)) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * h

    body = [f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#333"/>']
    for e in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        body.append(_text(px(10.0 ** e), top + h + 16, f"{10.0 ** e:g}", "middle"))
    for e in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        body.append(_text(left - 6, py(10.0 ** e) + 4, f"{10 ** e:,}" if e >= 0 else f"{10.0 ** e:g}", "end"))
    body.append(_text(left + w / 2, top + h + 34, "arithmetic intensity (FLOP/byte)", "middle"))
    body.append(_text(14, top + h / 2, "GFLOP/s", "middle", f' transform="rotate(-90 14 {top + h / 2})"'))
    roof = [(x0, r.roof(x0)), (r.ridge, r.peak_gflops), (x1, r.peak_gflops)]
    body.append('<polyline class="roof" fill="none" stroke="#c0392b" stroke-width="2" points="'
                + " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in roof) + '"/>')
    body.append(_text(px(x1) - 4, py(r.peak_gflops) - 6, f"{fmt_gflops(r.peak_gflops)} FP32", "end"))
    body.append(_text(px(r.ridge) + 4, py(r.peak_gflops) + 16, f"{r.peak_gbps:.0f} GB/s, ridge {r.ridge:.1f}"))
    for p in r.points:
        y = p.achieved_gflops or p.attainable_gflops
        cx, cy = px(p.intensity), py(y)
        body.append(f'<g class="point" data-segment="{escape(p.label)}" data-intensity="{p.intensity!r}" '
                    f'data-gflops="{y!r}">')
        body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{scheduler_color(p.scheduler)}" '
                    'stroke="#333"/>')
        body.append(_text(cx + 9, cy + 4, p.label))
        body.append("</g>")
    ly = top + h + 56
    for k, p in enumerate(r.points):
        achieved = f", achieved {fmt_gflops(p.achieved_gflops)}" if p.achieved_gflops else ""
        body.append(_text(left, ly + 16 * k, f"{p.label} {p.scheduler}: {p.intensity:.3g} FLOP/B, "
                          f"{p.bound}-bound, roof {fmt_gflops(p.attainable_gflops)}{achieved}"))
    note = ("points at achieved FLOP/s (GPU profile)" if any(p.achieved_gflops for p in r.points)
            else "points on the roof: achieved FLOP/s need a GPU profile")
    body.append(_text(left, ly + 16 * len(r.points), note + (f"; not plotted: {', '.join(r.skipped)}"
                                                               if r.skipped else "")))
    return _doc(left + w + 60, int(ly + 16 * len(r.points) + 20), title, body)


def history_svg(points: Sequence[HistoryPoint], title: str) -> str:
    from fusescope.model import fmt_ms

    row_h, left, bar_w = 22, 150, 360
    top = max((p.total_ms or 0.0) for p in points) if points else 0.0
    body = []
    for k, p in enumerate(points):
        y = 40 + k * row_h
        w = bar_w * (p.total_ms or 0.0) / top if top > 0 else 0.0
        body.append(f'<g class="run" data-run="{escape(p.label)}">')
        body.append(_text(10, y + 14, f"{p.label} {p.backend}"))
        body.append(f'<rect x="{left}" y="{y}" width="{w:.2f}" height="{row_h - 6}" '
                    f'fill="{"#8ecae6" if p.status == "ok" else "#e63946"}" data-ms="{p.total_ms}"/>')
        body.append(_text(left + w + 6, y + 14, f"{fmt_ms(p.total_ms)}  {p.segments} seg  {p.options}"))
        body.append("</g>")
    return _doc(left + bar_w + 420, 50 + len(points) * row_h, title, body)


class ChartError(ValueError):
    """The message is one line for the user."""


def chart_svg(chart: str, runs: Sequence[RunResult]) -> str:
    """`chart` ("time", "roofline" or "history") of the last of `runs` (history: all of them)."""
    from fusescope.render import charts

    if not runs:
        raise ChartError("no runs to chart")
    run = runs[-1]
    if chart == "history":
        return history_svg(charts.history(runs), f"Run history ({len(runs)} run(s))")
    if not run.segments:
        raise ChartError(f"the run has no segment figures ({run.status}: {run.message})")
    what = f"{run.backend}, {run.device or 'no device'}"
    if chart == "time":
        return time_svg(charts.time_bars(run), f"Time per segment ({what})", run.timing)
    if chart == "roofline":
        r = charts.roofline(run)
        if r is None:
            raise ChartError("the run recorded no device ceilings (a bundle saved before they were kept)")
        return roofline_svg(r, f"Roofline on {r.device} ({what})")
    raise ChartError(f"unknown chart {chart!r}: use {', '.join(charts.CHARTS)}")
