"""The Run tab's charts (v cycles table -> time -> roofline -> history) through Pilot, their data
checked against the runs they draw; and `fusescope export --chart` on a real run."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from fusescope.cli import main
from fusescope.model import CompileOptions, RunResult, SegmentRun, fmt_ms
from fusescope.widgets.run_view import RunView

SVG = {"s": "http://www.w3.org/2000/svg"}


def recorded(times: list[float], options: CompileOptions | None = None, gpu: bool = False) -> RunResult:
    """A run as the worker records it: per segment time, bytes, FLOPs; the device's ceilings."""
    segments = tuple(
        SegmentRun(k, "pointwise" if k % 2 else "reduction", f"k{k}", t, 4096 * (k + 1),
                   4096 * (k + 1) / (t * 1e-3) / 1e9 if gpu else None,
                   4096 * (k + 1) / (t * 1e-3) / 1e9 / 3352.0 if gpu else None,
                   0.0, None, None, flops=[1024, 0, 65536][k] if k < 3 else 8192)
        for k, t in enumerate(times))
    return RunResult("cuda" if gpu else "emulate", "ok", "1 output(s) match the reference",
                     options or CompileOptions(), gpu, segments, (), "wall time", "dev", 0.1,
                     ceiling_device="NVIDIA H100 80GB HBM3 (model)", peak_gbps=3352.0, peak_gflops=66900.0)


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield RunView(id="run")


@pytest.mark.asyncio
async def test_v_cycles_the_charts_drawn_from_the_runs() -> None:
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.query_one(RunView)
        before = recorded([2.0, 1.0, 4.0])
        after = recorded([1.5, 1.0, 3.0], CompileOptions(forwarding=False), gpu=True)
        view.show_runs([before, after])
        view.focus()
        await pilot.pause()
        assert view.showing == "table"

        await pilot.press("v")
        await pilot.pause()
        assert view.showing == "time" and view.charts.display and not view.query_one("#run-table").display
        bars = view.charts.bars
        assert [(b.label, b.time_ms, b.gbps) for b in bars] == [
            (f"g{s.segment}", s.time_ms, s.gbps) for s in after.segments]
        for s in after.segments:  # every segment's time and bandwidth is on screen
            assert fmt_ms(s.time_ms) in view.charts.text and f"{s.gbps:.1f} GB/s" in view.charts.text
        assert view.text == view.charts.text  # what c copies and w exports

        await pilot.press("v")
        await pilot.pause()
        assert view.showing == "roofline"
        r = view.charts.roofline
        assert r is not None and (r.peak_gbps, r.peak_gflops) == (3352.0, 66900.0)
        assert math.isclose(r.ridge, 66900.0 / 3352.0)
        plotted = {s.segment: s for s in after.segments if s.flops}
        assert [p.label for p in r.points] == [f"g{k}" for k in plotted] and r.skipped == ("g1",)
        for p in r.points:
            s = plotted[int(p.label[1:])]
            assert p.intensity == s.flops / s.bytes
            assert p.attainable_gflops == min(66900.0, 3352.0 * s.flops / s.bytes) and p.bound == "memory"
            assert math.isclose(p.achieved_gflops, s.flops / (s.time_ms * 1e-3) / 1e9)
            assert f"{p.intensity:.3g} FLOP/B" in view.charts.text
        assert "ridge at 20.0 FLOP/B" in view.charts.text

        await pilot.press("v")
        await pilot.pause()
        assert view.showing == "history"
        h = view.charts.history
        assert [(p.label, p.total_ms, p.options) for p in h] == [
            ("#1", 7.0, "forwarding on, 4 streams"), ("#2", 5.5, after.options.describe())]
        assert fmt_ms(7.0) in view.charts.text and fmt_ms(5.5) in view.charts.text

        await pilot.press("v")
        await pilot.pause()
        assert view.showing == "table" and view.query_one("#run-table").display


@pytest.mark.asyncio
async def test_a_run_without_a_gpu_profile_puts_points_on_the_roof() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(RunView)
        view.show_runs([recorded([1.0, 2.0, 3.0])])
        view.show_chart("roofline")
        await pilot.pause()
        r = view.charts.roofline
        assert r is not None and all(p.achieved_gflops is None for p in r.points)
        assert "achieved FLOP/s need a GPU profile" in view.charts.text
        view.show_chart("time")
        await pilot.pause()
        assert "bandwidth: needs a GPU profile" in view.charts.text


def test_export_chart_svgs_carry_the_runs_figures(tmp_path: Path) -> None:
    """A real run (reference back end: fast) saved as a bundle; each chart's SVG is well-formed
    and its marks carry the run's own figures."""
    bundle = tmp_path / "b.json"
    assert main(["run", "seed003_rope_bwd_small", "--backend", "reference", "--save-bundle", str(bundle)]) == 0
    run = json.loads(bundle.read_text())["runs"][-1]["result"]
    segs = {f"g{s['segment']}": s for s in run["segments"]}
    assert any(s["flops"] for s in segs.values()) and run["peak_gbps"] > 0 and run["peak_gflops"] > 0

    out = tmp_path / "roof.svg"
    assert main(["export", str(bundle), "--chart", "roofline", "-o", str(out)]) == 0
    points = ET.parse(out).getroot().findall(".//s:g[@class='point']", SVG)
    assert {p.get("data-segment") for p in points} == {k for k, s in segs.items() if s["flops"] and s["bytes"]}
    for p in points:
        s = segs[p.get("data-segment")]
        assert float(p.get("data-intensity")) == s["flops"] / s["bytes"]
        roof = min(run["peak_gflops"], run["peak_gbps"] * s["flops"] / s["bytes"])
        assert math.isclose(float(p.get("data-gflops")), roof)

    out = tmp_path / "time.svg"
    assert main(["export", str(bundle), "--chart", "time", "-o", str(out)]) == 0
    rects = ET.parse(out).getroot().findall(".//s:rect[@class='time']", SVG)
    assert [float(r.get("data-ms")) for r in rects] == [s["time_ms"] for s in segs.values()]

    out = tmp_path / "history.svg"
    assert main(["export", str(bundle), "--chart", "history", "-o", str(out)]) == 0
    runs = ET.parse(out).getroot().findall(".//s:g[@class='run']", SVG)
    assert [r.get("data-run") for r in runs] == ["#1"]
