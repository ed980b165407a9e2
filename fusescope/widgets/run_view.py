"""The Run tab: run the whole fusion on the emulator, the reference or the GPU (in the worker
process), and a sortable row per segment: time, change against the previous run, a bar of its
share of the time, bytes, GB/s, % of peak bandwidth, max error against the reference,
registers, local memory per thread and occupancy; totals, the bytes crossing segment
boundaries, every output's error, and the history of runs (a change of options is compared
with the run before it). `v` shows charts in the table's place (fusescope.widgets.run_charts)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from fusescope.messages import RunRequested, SegmentSelected
from fusescope.progress import RunTracker, fmt_seconds
from fusescope.render.charts import CHARTS
from fusescope.render.graph import scheduler_color
from fusescope.render.run_cells import CSV_HEADER, _bar, _csv, _delta, _error, _num
from fusescope.widgets.copying import copy_text
from fusescope.widgets.run_charts import RunCharts
from fusescope.widgets.run_progress import RunProgressView

if TYPE_CHECKING:
    from fusescope.model import RunResult, SegmentRun

PLACEHOLDER = ("No run yet. e runs on the emulator (the generated CUDA, compiled with g++, on the CPU), "
               "f on the reference evaluator, d on the GPU (cuda); p turns profiling on or off.")
HISTORY_SHOWN = 5


def _value(name: str) -> Callable[[SegmentRun], float | int | str | None]:
    return lambda s: getattr(s, name)


# (key, header, sort value of a segment row); sorting puts rows without a value last.
COLUMNS: tuple[tuple[str, str, Callable[[SegmentRun], float | int | str | None]], ...] = (
    ("seg", "seg", _value("segment")),
    ("scheduler", "scheduler", _value("scheduler")),
    ("time", "time", _value("time_ms")),
    ("delta", "Δ time", lambda s: None),  # filled from the previous run in _sort_value
    ("share", "share of time", _value("time_ms")),
    ("bytes", "bytes", _value("bytes")),
    ("gbps", "GB/s", _value("gbps")),
    ("peak", "% peak", _value("peak_fraction")),
    ("error", "max error", _value("max_error")),
    ("regs", "regs", _value("registers")),
    ("local", "local B", _value("local_bytes")),
    ("occupancy", "occupancy", _value("occupancy")),
)
COLUMN_KEYS = tuple(key for key, _, _ in COLUMNS)


class RunView(Vertical, can_focus=True):
    BINDINGS = [
        Binding("e", "run('emulate')", "Run emulate"),
        Binding("f", "run('reference')", "Run reference"),
        Binding("d", "run('cuda')", "Run cuda"),
        Binding("p", "toggle_profile", "Profile on/off"),
        Binding("z", "sort_next", "Sort column"),
        Binding("Z", "sort_reverse", "Reverse sort"),
        Binding("v", "next_chart", "Charts"),
        Binding("c", "copy", "Copy text"),
    ]

    DEFAULT_CSS = """
    RunView {
        height: 1fr;
    }
    RunView > #run-status, RunView > #run-history {
        height: auto;
        padding: 0 1;
    }
    RunView > DataTable {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
    }
    RunView > DataTable:focus {
        border: round $accent;
    }
    RunView > #run-outputs {
        height: auto;
        max-height: 8;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.result: RunResult | None = None
        self.previous: RunResult | None = None  # what the delta column compares with
        self.history: list[RunResult] = []
        self.profile = True
        self.running: str | None = None  # the back end of the run in progress
        self.tracker: RunTracker | None = None  # its progress, while it runs
        self.selected: int | None = None
        self.sort_column = "seg"
        self.sort_reverse = False
        self.status_text = PLACEHOLDER
        self._status = Static(Text(PLACEHOLDER, style="dim italic"), id="run-status")
        self._progress = RunProgressView(id="run-progress")
        self._table: DataTable[Text | str] = DataTable(id="run-table", cursor_type="row", zebra_stripes=True)
        self._table.border_title = "Segments (z: sort, click a header)"
        self.charts = RunCharts(id="run-charts")
        self._outputs = Static("", id="run-outputs")
        self._history = Static("", id="run-history")

    def compose(self) -> ComposeResult:
        yield self._status
        yield self._progress
        yield self._table
        yield self.charts
        yield self._outputs
        yield self._history

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for key, header, _ in COLUMNS:
            self._table.add_column(header, key=key)

    def clear(self) -> None:
        self.result = self.previous = None
        self.history = []
        self._stop_progress()
        self._table.clear()
        self.status_text = PLACEHOLDER
        self._status.update(Text(PLACEHOLDER, style="dim italic"))
        self._outputs.update("")
        self._history.update("")
        self.charts.show([])

    def action_run(self, backend: str) -> None:
        if self.running is not None:
            self.notify(f"A run on {self.running} is in progress (esc cancels it)", severity="warning")
            return
        self.post_message(RunRequested(backend, self.profile))

    def started(self, tracker: RunTracker) -> None:
        """The app started a run: its progress shows here, the table is covered until it ends."""
        self.running = tracker.backend
        self.tracker = tracker
        had_focus = self._table.has_focus
        self._table.loading = True
        if had_focus:  # the loading cover takes the focus: keep it here, so e/f/d/p still answer
            self.focus()
        self.status_text = f"{tracker.title()} in the worker process (esc cancels)"
        self._status.update(Text(self.status_text, style="bold"))
        self._progress.start(tracker)

    @property
    def steps_text(self) -> str:
        """What the progress lines say now, plain."""
        return self._progress.text if self.tracker is not None else ""

    def show_progress(self) -> None:
        """The tracker has a new report from the worker."""
        self._progress.refresh_progress()

    def _stop_progress(self) -> None:
        self.running = None
        self.tracker = None
        self._progress.stop()
        self._table.loading = False
        if self.has_focus:  # given to the view while the table was covered
            self._table.focus()

    def cancelled(self, result: RunResult) -> None:
        """The run was cancelled: say where it was stopped; the last results stay on show."""
        tracker = self.tracker
        where = ""
        if tracker is not None:
            p = tracker.latest
            where = f" at {p.where()}" if p.segment is not None else f" while {p.action}"
        took = f" after {fmt_seconds(tracker.elapsed())}" if tracker is not None else ""
        self._stop_progress()
        line = Text(f"Run on {result.backend} cancelled{took}{where}: {result.message}", style="bold yellow")
        if self.result is not None:
            line.append("\nThe table shows the run before.", style="dim")
        self.status_text = line.plain
        self._status.update(line)

    def action_toggle_profile(self) -> None:
        self.profile = not self.profile
        self.notify(f"Profiling {'on' if self.profile else 'off'} for the next run", timeout=2)

    # ---- showing a run ---------------------------------------------------------------
    def show_runs(self, runs: Sequence[RunResult]) -> None:
        """Show the last of `runs` (a session's history), compared with the one before it."""
        self._stop_progress()
        self.history = list(runs)
        if not runs:
            self.clear()
            return
        self.result = runs[-1]
        self.previous = runs[-2] if len(runs) > 1 else None
        self._fill()
        self.charts.show(self.history)
        self._show_status()
        self._show_outputs()
        self._show_history()

    def _fill(self) -> None:
        from fusescope.model import fmt_ms, human_bytes

        assert self.result is not None
        # The columns too: each is as wide as its widest cell, of this run (not of any before).
        self._table.clear(columns=True)
        self._add_columns()
        total = self.result.total_ms or 0.0
        for s in self._sorted(self.result.segments):
            self._table.add_row(
                Text(f"g{s.segment}", style="bold"),
                Text(s.scheduler, style=scheduler_color(s.scheduler)),
                fmt_ms(s.time_ms),
                _delta(s.time_ms, self._before(s)),
                _bar(s.time_ms, total),
                human_bytes(s.bytes),
                _num(s.gbps, "{:.1f}"),
                _num(s.peak_fraction, "{:.1%}"),
                _error(s.max_error),
                _num(s.registers, "{}"),
                _num(s.local_bytes, "{}"),
                _num(s.occupancy, "{:.0%}"),
                key=str(s.segment),
            )
        arrow = "▼" if self.sort_reverse else "▲"
        header = dict((k, h) for k, h, _ in COLUMNS)[self.sort_column]
        self._table.border_title = f"Segments · sorted by {header} {arrow} (z: next column, Z: reverse, click a header)"
        if self.selected is not None:
            self.select_segment(self.selected)

    def _before(self, s: SegmentRun) -> float | None:
        """The same segment's time in the previous run (same id and scheduler), if it ran."""
        if self.previous is None:
            return None
        for p in self.previous.segments:
            if p.segment == s.segment and p.scheduler == s.scheduler:
                return p.time_ms
        return None

    def _sorted(self, segments: Sequence[SegmentRun]) -> list[SegmentRun]:
        def value(s: SegmentRun) -> float | int | str | None:
            if self.sort_column == "delta":
                before = self._before(s)
                return None if before is None or s.time_ms is None else s.time_ms - before
            return dict((k, f) for k, _, f in COLUMNS)[self.sort_column](s)

        present = [s for s in segments if value(s) is not None]
        missing = [s for s in segments if value(s) is None]
        present.sort(key=lambda s: value(s), reverse=self.sort_reverse)  # type: ignore[arg-type, return-value]
        return present + missing

    def _show_status(self) -> None:
        from fusescope.model import fmt_ms, human_bytes

        r = self.result
        assert r is not None
        style = {"ok": "bold green", "mismatch": "bold red"}.get(r.status, "bold red")
        status = Text(f"{r.backend}: {r.status} · {r.message}", style=style)
        if r.segments:
            status.append(f"\n{r.device} · time: {r.timing}", style="dim")
            status.append(f"\n{len(r.segments)} segment(s) · total {fmt_ms(r.total_ms)}")
            if self.previous is not None and self.previous.total_ms and r.total_ms:
                status.append(" (")
                status.append_text(_delta(r.total_ms, self.previous.total_ms))
                status.append(f" vs the previous run, {len(self.previous.segments)} segment(s))")
            status.append(f" · {human_bytes(r.total_bytes)} moved · "
                          f"{human_bytes(r.boundary_bytes)} cross segment boundaries")
            if self.previous is not None and self.previous.options != r.options:
                status.append(f"\noptions now: {r.options.describe()}; before: {self.previous.options.describe()}",
                              style="yellow")
        self.status_text = status.plain
        self._status.update(status)

    def _show_outputs(self) -> None:
        assert self.result is not None
        lines = Text()
        for o in self.result.outputs:
            lines.append(f"output {o.name}: max error {o.max_error:.3e} ({o.tolerance_text}) ")
            lines.append("ok\n" if o.ok else "MISMATCH\n", style="green" if o.ok else "bold red")
        self._outputs.update(lines)

    def _show_history(self) -> None:
        from fusescope.model import fmt_ms

        lines = Text(f"History ({len(self.history)} run(s), newest last)\n", style="bold")
        first = max(0, len(self.history) - HISTORY_SHOWN)
        for k, r in enumerate(self.history[first:], start=first + 1):
            lines.append(f"  #{k} {r.backend:<9} {r.status:<8} {fmt_ms(r.total_ms):>10}  "
                         f"{len(r.segments)} seg  {r.options.describe()}\n",
                         style="" if r.status == "ok" else "red")
        self._history.update(lines)

    # ---- sorting and selection ---------------------------------------------------------
    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        """Sort the rows by `column` (a key of COLUMNS); the same column again flips the order."""
        if column not in COLUMN_KEYS:
            raise KeyError(f"no column {column!r} (columns: {', '.join(COLUMN_KEYS)})")
        if reverse is None:
            reverse = not self.sort_reverse if column == self.sort_column else column in ("time", "share", "delta")
        self.sort_column, self.sort_reverse = column, reverse
        if self.result is not None:
            self._fill()

    @property
    def showing(self) -> str:
        """"table", or the chart shown in its place."""
        return self.charts.chart if self.charts.display else "table"

    def show_chart(self, chart: str) -> None:
        """Show `chart` (one of CHARTS) in the table's place, or "table" to go back."""
        if chart != "table" and chart not in CHARTS:
            raise KeyError(f"no chart {chart!r} (charts: {', '.join(CHARTS)})")
        self._table.display = chart == "table"
        self.charts.display = chart != "table"
        if chart != "table":
            self.charts.show(self.history, chart)

    def action_next_chart(self) -> None:
        order = ("table", *CHARTS)
        self.show_chart(order[(order.index(self.showing) + 1) % len(order)])

    def action_sort_next(self) -> None:
        self.sort_by(COLUMN_KEYS[(COLUMN_KEYS.index(self.sort_column) + 1) % len(COLUMN_KEYS)])

    def action_sort_reverse(self) -> None:
        self.sort_by(self.sort_column, not self.sort_reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_key.value is not None:
            self.sort_by(event.column_key.value)

    def select_segment(self, sid: int, post: bool = False) -> None:
        self.selected = sid
        try:
            row = self._table.get_row_index(str(sid))
        except Exception:  # no run yet, or this segment is not in it (RowDoesNotExist)
            return
        if self._table.cursor_row != row:
            self._table.move_cursor(row=row)
        if post:
            self.post_message(SegmentSelected(sid))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # Only a move the user made is a selection (refilling the table moves the cursor too,
        # and echoing that would undo the selection made elsewhere). An event about a row the
        # cursor has left since is stale: a refill queues one for row 0 and one for the selected
        # row, and echoing both made the views swap between the two segments without end.
        if not self._table.has_focus or event.cursor_row != self._table.cursor_row:
            return
        key = event.row_key.value
        if key is not None and int(key) != self.selected:
            self.selected = int(key)
            self.post_message(SegmentSelected(int(key)))

    # ---- text out ----------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The run's report, or the chart shown in the table's place."""
        if self.showing != "table":
            return self.charts.text
        return self.result.report() if self.result is not None else ""

    def rows(self) -> list[list[str]]:
        """The table's rows in the order shown, as numbers (units in the header; empty where
        the run has no figure): what a CSV export writes."""
        out = [list(CSV_HEADER)]
        if self.result is None:
            return out
        total = self.result.total_ms
        for s in self._sorted(self.result.segments):
            before = self._before(s)
            delta = (s.time_ms - before) / before * 100 if s.time_ms is not None and before else None
            share = s.time_ms / total * 100 if s.time_ms is not None and total else None
            occupancy = s.occupancy * 100 if s.occupancy is not None else None
            peak = s.peak_fraction * 100 if s.peak_fraction is not None else None
            out.append([str(s.segment), s.scheduler, s.kernel or "", *map(_csv, (
                s.time_ms, delta, share, s.bytes, s.gbps, peak, s.max_error, s.registers, s.local_bytes,
                occupancy))])
        return out

    def action_copy(self) -> None:
        copy_text(self, self.text, "the run")
