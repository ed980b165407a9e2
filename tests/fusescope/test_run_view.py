"""The Run view's table on recorded results: sorting by key and by header click, the delta
column against the previous run, totals, boundary bytes and the history."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from fusescope.model import CompileOptions, RunResult, SegmentRun
from fusescope.widgets.run_view import RunView

pytestmark = pytest.mark.asyncio


def run(times: list[float], options: CompileOptions | None = None) -> RunResult:
    segments = tuple(SegmentRun(k, "pointwise", f"k{k}", t, 1000 * (k + 1), None, None, 0.0, None, None)
                     for k, t in enumerate(times))
    return RunResult("emulate", "ok", "1 output(s) match the reference", options or CompileOptions(), False,
                     segments, (), "wall time", "CPU emulator (g++)", 0.1, boundary_bytes=2048)


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield RunView(id="run")


async def test_sorting_deltas_totals_and_history() -> None:
    app = Host()
    async with app.run_test(size=(160, 40)) as pilot:
        view = app.query_one(RunView)
        table = view.query_one(DataTable)
        before = run([1.0, 4.0, 2.0])
        after = run([1.0, 2.0, 3.0], CompileOptions(forwarding=False))
        view.show_runs([before, after])
        await pilot.pause()
        column = [str(table.get_row_at(k)[0]) for k in range(table.row_count)]
        assert column == ["g0", "g1", "g2"]
        deltas = {str(table.get_row_at(k)[0]): str(table.get_row_at(k)[3]) for k in range(3)}
        assert deltas == {"g0": "+0%", "g1": "-50%", "g2": "+50%"}
        assert "total 6.000 ms" in view.status_text and "-14% vs the previous run" in view.status_text
        assert "5.9 KiB moved" in view.status_text and "2.0 KiB cross segment boundaries" in view.status_text
        assert "options now: forwarding off" in view.status_text
        view.focus()
        table.focus()
        await pilot.press("z", "z")  # seg -> scheduler -> time (slowest first)
        await pilot.pause()
        assert view.sort_column == "time" and view.sort_reverse
        assert [str(table.get_row_at(k)[0]) for k in range(3)] == ["g2", "g1", "g0"]
        await pilot.press("Z")
        assert [str(table.get_row_at(k)[0]) for k in range(3)] == ["g0", "g1", "g2"]
        view.sort_by("delta")  # biggest slow-down first
        assert [str(table.get_row_at(k)[0]) for k in range(3)] == ["g2", "g0", "g1"]
        # Clicking a header sorts by that column.
        await pilot.click(DataTable, offset=(3, 1))
        await pilot.pause()
        assert view.sort_column == "seg"
        rows = view.rows()  # the CSV export: numbers, units in the header, in the order shown
        assert rows[0][:5] == ["segment", "scheduler", "kernel", "time (ms)", "time change vs previous run (%)"]
        assert rows[1] == ["0", "pointwise", "k0", "1.0", "0.0", repr(1.0 / 6.0 * 100), "1000", "", "", "0.0", "", "", ""]
        assert rows[2][3:7] == ["2.0", "-50.0", repr(2.0 / 6.0 * 100), "2000"]
        assert not any("ms" in c or "KiB" in c or "█" in c for row in rows[1:] for c in row)
        history = str(view.query_one("#run-history").render())
        assert "History (2 run(s)" in history and "#2 emulate" in history
        with pytest.raises(KeyError, match="no column 'nope'"):
            view.sort_by("nope")


async def test_columns_fit_the_run_shown_not_the_widest_before() -> None:
    # A slow run's "12345.000 ms" left the time column that wide for every run after it.
    app = Host()
    async with app.run_test(size=(160, 40)) as pilot:
        view = app.query_one(RunView)
        table = view.query_one(DataTable)
        view.show_runs([run([12345.0, 2.0])])
        await pilot.pause()
        assert table.columns["time"].content_width == len("12345.000 ms")
        view.show_runs([run([1.0, 2.0])])
        await pilot.pause()
        assert table.columns["time"].content_width == max(len("time"), len("1.000 ms"))
        assert [str(table.get_row_at(k)[2]) for k in range(2)] == ["1.000 ms", "2.000 ms"]
