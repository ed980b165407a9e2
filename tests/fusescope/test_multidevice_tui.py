"""The TUI on multi-device fusions, driven headless through Textual's Pilot: the sharding column
in the listing, the regions and communications in the Segments tab, the host IR of a chosen
rank, a run on 2 ranks (worker processes over gloo) in the Run tab, and a fusion whose
shardings cannot be laid out, shown without taking the session down."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widgets import Static, TabbedContent

import engine.multidevice as md
from engine import load_fusion
from fusescope import samples
from fusescope.app import FusescopeApp
from fusescope.model import Session, load_session, session_from_source
from fusescope.widgets.host_ir_view import HostIrView
from fusescope.widgets.listing_view import ListingView
from fusescope.widgets.md_run_view import MultiRunView
from fusescope.widgets.run_view import RunView
from fusescope.widgets.schedule_view import ScheduleView
from fusescope.widgets.segments_view import SegmentsView
from fusescope.widgets.transform_view import TransformView

pytestmark = pytest.mark.asyncio
SIZE = (140, 40)
TP = "multidevice_tp_mlp"


def _session(name: str = TP) -> Session:
    return load_session(samples.resolve(name))


async def _wait_for_md_run(app: FusescopeApp, pilot: object) -> None:
    for _ in range(600):  # 60 s at most: a run on 2 ranks takes a few seconds
        await pilot.pause(0.1)  # type: ignore[attr-defined]
        if app._md_cancel is None:
            return
    raise AssertionError("the multi-device run did not finish")


async def test_listing_has_the_sharding_column_and_its_rows_select_tensors() -> None:
    app = FusescopeApp(_session())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        listing = app.query_one(ListingView)
        assert listing.text.startswith(str(load_fusion(samples.resolve(TP)).fusion).rstrip("\n"))
        rows = [e for e in listing.entries if e.text.startswith("  T") and "DeviceMesh{0 1}  " in e.text]
        assert [e.tensor for e in rows] == [f"T{k}" for k in range(8)]
        assert rows[1].text == "  T1  DeviceMesh{0 1}  mesh_x on axis 0 (split by 2)  file"
        listing.focus()
        listing.highlighted = listing.entries.index(rows[5])
        await pilot.pause()
        assert app.query_one(TransformView).tensor == "T5"
        # Nothing is compiled (compile_fusion refuses meshes): the Schedule tab says why.
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.session.compiled(app.options) is None
        schedule = app.query_one(ScheduleView)
        assert schedule.result is not None and "multi-device fusion has no single compilation" in schedule.result.error
        assert [n.severity for n in app._notifications if n.severity == "error"] == []


async def test_segments_show_regions_and_communications_and_host_ir_has_a_rank_selector() -> None:
    app = FusescopeApp(_session())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        await pilot.pause()
        segments = app.query_one(SegmentsView)
        assert segments.border_title == "Segments · multi-device · 2 regions, 1 communications"
        graph = segments.graph_text.splitlines()
        assert "│ region 0 on DeviceMesh{0 1}" in graph[1] and "│   T6 = gelu(T5)" in graph[3]
        comm = next(k for k, line in enumerate(graph) if "Communication 0" in line)
        assert graph[comm].startswith("║ Communication 0: Allreduce") and graph[comm - 1].startswith("╔═")
        assert graph[comm + 1].startswith("║   team=(0 1)")
        assert "   │ T8" in graph  # the tensor the region hands to the Allreduce
        program = md.program_of(load_fusion(samples.resolve(TP)))
        await pilot.press("h")
        await pilot.pause()
        view = app.query_one(HostIrView)
        assert view.text == str(program.host_ir(0)) and view.border_title == "Host IR · rank 0 of 2"
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert view.rank == 1 and view.text == str(program.host_ir(1))
        assert view.border_title == "Host IR · rank 1 of 2"
        assert "  Wait(Communication 0)" in view.text.splitlines()
        await pilot.press("right_square_bracket")  # wraps around
        await pilot.pause()
        assert view.rank == 0


async def test_run_tab_runs_two_ranks_and_shows_each_ranks_results_and_timeline() -> None:
    app = FusescopeApp(_session())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        view = app.query_one(MultiRunView)
        assert view.display and not app.query_one(RunView).display and app.focused is view
        assert view.ranks == 2  # the mesh's size
        await pilot.press("f")
        await _wait_for_md_run(app, pilot)
        result = view.result
        assert result is not None and result.status == "ok", result and result.message
        assert [(r.rank, r.status, r.outputs[0].shape) for r in result.results] == [(0, "ok", (8, 8)), (1, "ok", (8, 8))]
        assert all(o.max_error <= o.tolerance for r in result.results for o in r.outputs)
        assert view.text == result.report() and "rank 1\n  region 0" in view.text
        assert [s.kind for s in result.results[1].timeline] == ["compute", "Allreduce", "compute"]
        await pilot.press("h")
        await pilot.pause()
        host = app.query_one(HostIrView)
        assert host.timeline_text.startswith("\nTimeline of rank 0 (reference")
        assert "Communication 0" in host.timeline_text
        assert ("Run on 2 ranks (reference)", "all 2 ranks match their shards of the reference") in [
            (n.title, n.message) for n in app._notifications]


async def test_bad_sharding_shows_its_error_and_the_session_goes_on() -> None:
    source = samples.resolve(TP).read_text().replace("tv.outer_split(axis, d)", "tv.outer_split(axis, 3)")
    app = FusescopeApp(session_from_source(source, "bad_tp.py"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        errors = [(n.title, n.message) for n in app._notifications if n.severity == "error"]
        assert errors == [("The shardings cannot be laid out", "MultiDeviceError: T1: ideviceIdx.x16{3} is an outer "
                           "split by 3 parallelized on deviceIdx.x, but DeviceMesh{0 1} has 2 devices along it")]
        assert "  T1  DeviceMesh{0 1}  invalid sharding (the MultiDeviceError below)  file" in \
            app.query_one(ListingView).text
        for key in "gshx":
            await pilot.press(key)
            await pilot.pause()
        assert app.query_one(SegmentsView).text.startswith("No multi-device program: MultiDeviceError: T1:")
        assert app.query_one(HostIrView).shown.startswith("No host IR: MultiDeviceError: T1:")
        await pilot.press("f")  # nothing to run: said, not crashed
        await pilot.pause()
        assert app._md_cancel is None
        assert "Nothing to run: the fusion's shardings are invalid" in [n.message for n in app._notifications]
        # The session goes on: another fusion opens in its place, with the usual Run view.
        app._show_session(_session("softmax"))
        await pilot.pause()
        assert app.query_one(RunView).display and not app.query_one(MultiRunView).display
        assert app.query_one(TabbedContent).active == "tab-run"


async def test_esc_stops_the_ranks_of_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rank process waits 60 s before it runs the rank's code, so the escape reaches a
    run that is still under way however loaded the machine is (real ranks of this fusion
    finish in about 3 s, which a busy host's event loop can outlast)."""
    import subprocess
    import sys

    from fusescope import md_run

    real_popen = subprocess.Popen

    def late_ranks(cmd: list[str], **kw: object) -> subprocess.Popen[bytes]:
        if cmd[1:3] == ["-m", "fusescope.md_rank"]:
            cmd = [sys.executable, "-c", "import runpy, sys, time; time.sleep(60); "
                   f"sys.argv = {['md_rank', *cmd[3:]]!r}; runpy.run_module('fusescope.md_rank', run_name='__main__')"]
        return real_popen(cmd, **kw)

    monkeypatch.setattr(md_run.subprocess, "Popen", late_ranks)
    app = FusescopeApp(_session())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x", "f")
        await pilot.pause(0.3)
        assert app._md_cancel is not None and app.busy
        await pilot.press("escape")
        await _wait_for_md_run(app, pilot)
        result = app.query_one(MultiRunView).result
        assert result is not None and result.status == "cancelled"
        assert [(r.rank, r.status) for r in result.results] == [(0, "cancelled"), (1, "cancelled")]
        assert not app.busy


def _rows(app: FusescopeApp, region: Region) -> list[str]:
    """The screen's text in `region`, row by row, as drawn."""
    strips = app.screen._compositor.render_strips()  # noqa: SLF001 (what the terminal gets)
    return ["".join(seg.text for seg in strips[y])[region.x:region.right] for y in range(region.y, region.bottom)]


async def test_run_tab_at_80x24_wraps_its_sentences_and_fits_the_timeline() -> None:
    # The report: at 80x24 the intro line was cut ("... f runs it o") and the timeline's kind
    # column too ("ReduceScat"), even with the tensors pane hidden.
    app = FusescopeApp(_session("multidevice_sp_mlp"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("x")
        await pilot.pause()
        view = app.query_one(MultiRunView)
        drawn = " ".join(_rows(app, view.content_region))
        for word in view.status_text.split():  # every word of the intro is on screen
            assert word in drawn, (word, drawn)
        await pilot.press("f")
        await _wait_for_md_run(app, pilot)
        result = view.result
        assert result is not None and result.status == "ok", result and result.message
        for hidden in (False, True):  # beside the tensors pane, then with the pane hidden
            # On a loaded machine the layout after the pane toggles (and its re-render at the
            # new width) can take more than one pause: wait until the drawn timeline is the
            # one for the width the view has (up to about 10 s), then check it fits.
            for _ in range(100):
                await pilot.pause(0.1)
                width = view.scrollable_content_region.width
                timeline = result.timeline_text(width).splitlines()
                shown = view.query_one("#md-run-timeline", Static).render().plain.strip("\n").splitlines()
                if shown == timeline:
                    break
            assert max(len(line) for line in timeline) <= width and view.max_scroll_x == 0
            assert shown == timeline
            # Each step's name, and its kind in full, as drawn on the screen.
            view.scroll_to(y=view.query_one("#md-run-timeline").virtual_region.y, animate=False)
            await pilot.pause()
            drawn = "\n".join(_rows(app, view.content_region))
            assert "  Communication 0 chunk 0 (comm)" in drawn and "    ReduceScatter " in drawn, drawn
            bars = [line.count("#") for line in timeline]
            if not hidden:
                narrow = max(bars)
                await pilot.press("ctrl+t")
        assert max(bars) > narrow  # the bar took the room the pane gave back
        # The Host IR tab's timeline of the rank: the chunks with the stream each ran on.
        await pilot.press("h")
        await pilot.pause()
        rows = app.query_one(HostIrView).timeline_text.splitlines()
        assert any(r.startswith("Communication 0 chunk 0") and " Allgather     comm " in r for r in rows), rows
        assert any(r.startswith("region 0 chunk 1") and " compute       main " in r for r in rows), rows


async def test_timeline_rows_split_only_when_a_bar_would_not_fit() -> None:
    from fusescope.md_run import TIMELINE_BAR_MIN, MultiRunResult, RankResult, RankStep

    steps = (RankStep("Communication 0 + region 0 in 2 chunks", "overlap", 0.0, 5.0),
             RankStep("Communication 1", "ReduceScatter", 5.0, 10.0))
    result = MultiRunResult("reference", 1, "ok", "", (RankResult(0, "ok", "", timeline=steps),))
    wide = result.timeline_text(200).splitlines()
    assert wide[2].startswith("  Communication 0 + region 0 in 2 chunks  overlap        ")
    assert wide[3].startswith("  Communication 1                         ReduceScatter  ")
    assert max(len(line) for line in wide) <= 200 and wide[3].endswith("#" * 30)  # half the 60-cell bar
    narrow = result.timeline_text(52).splitlines()
    assert narrow[2:] == ["  Communication 0 + region 0 in 2 chunks", f"    overlap            0.000     5.000  {'#' * 6}",
                          "  Communication 1", f"    ReduceScatter      5.000    10.000  {' ' * 6}{'#' * 6}"]
    assert max(len(line) for line in narrow) == 52  # a 12-cell bar: the row's room
    assert TIMELINE_BAR_MIN <= 12 and result.timeline_text(20).splitlines()[3].endswith("#" * (TIMELINE_BAR_MIN // 2))


async def test_timeline_of_stream_chunks_shows_each_step_s_stream() -> None:
    from fusescope.md_run import MultiRunResult, RankResult, RankStep

    steps = (RankStep("Communication 0 chunk 0", "Allgather", 0.0, 2.0, "comm"),
             RankStep("Communication 0 chunk 1", "Allgather", 2.0, 4.0, "comm"),
             RankStep("region 0 chunk 0", "compute", 2.0, 6.0),
             RankStep("region 0 chunk 1", "compute", 6.0, 10.0))
    result = MultiRunResult("cuda", 1, "ok", "", (RankResult(0, "ok", "", timeline=steps),))
    wide = result.timeline_text(200).splitlines()
    assert wide[2].startswith("  Communication 0 chunk 0  Allgather  comm      0.000     2.000  ")
    assert wide[4].startswith("  region 0 chunk 0         compute    main      2.000     6.000  ")
    # The second gather's bar lies under the first chunk's compute: it is hidden behind it.
    bars = [(line.index("#"), line.rindex("#")) for line in wide[2:]]
    assert bars[2][0] <= bars[1][0] and bars[1][1] <= bars[2][1]
    narrow = result.timeline_text(52).splitlines()
    assert narrow[2] == "  Communication 0 chunk 0 (comm)" and narrow[3].startswith("    Allgather      0.000     2.000  ")
    assert max(len(line) for line in narrow) <= 52
