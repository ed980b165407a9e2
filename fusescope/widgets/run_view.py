"""The Run tab: run the whole fusion on the emulator, the reference or the GPU (in the worker
process), and a sortable row per segment: time, change against the previous run, a bar of its
share of the time, bytes, GB/s, % of peak bandwidth, max error against the reference,
registers, local memory per thread and occupancy; totals, the bytes crossing segment
boundaries, every output's error, and the history of runs (a change of options is compared
with the run before it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from fusescope.messages import RunRequested, SegmentSelected
from fusescope.render.graph import scheduler_color
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.model import RunResult, SegmentRun

PLACEHOLDER = ("No run yet. e runs on the emulator (the generated CUDA, compiled with g++, on the CPU), "
               "f on the reference evaluator, d on the GPU (cuda); p turns profiling on or off.")
BAR_WIDTH = 12
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
        self.selected: int | None = None
        self.sort_column = "seg"
        self.sort_reverse = False
        self.status_text = PLACEHOLDER
        self._status = Static(Text(PLACEHOLDER, style="dim italic"), id="run-status")
        self._table: DataTable[Text | str] = DataTable(id="run-table", cursor_type="row", zebra_stripes=True)
        self._table.border_title = "Segments (z: sort, click a header)"
        self._outputs = Static("", id="run-outputs")
        self._history = Static("", id="run-history")

    def compose(self) -> ComposeResult:
        yield self._status
        yield self._table
        yield self._outputs
        yield self._history

    def on_mount(self) -> None:
        for key, header, _ in COLUMNS:
            self._table.add_column(header, key=key)

    def clear(self) -> None:
        self.result = self.previous = None
        self.history = []
        self.running = None
        self._table.clear()
        self._table.loading = False
        self.status_text = PLACEHOLDER
        self._status.update(Text(PLACEHOLDER, style="dim italic"))
        self._outputs.update("")
        self._history.update("")

    def action_run(self, backend: str) -> None:
        if self.running is not None:
            self.notify(f"A run on {self.running} is in progress", severity="warning")
            return
        self.post_message(RunRequested(backend, self.profile))

    def started(self, backend: str) -> None:
        """The app started a run: say so and show the loading indicator until it ends."""
        self.running = backend
        had_focus = self._table.has_focus
        self._table.loading = True
        if had_focus:  # the loading cover takes the focus: keep it here, so e/f/d/p still answer
            self.focus()
        what = "profiling" if self.profile and backend != "reference" else "running"
        self.status_text = f"{what.capitalize()} on {backend} in the worker process…"
        self._status.update(Text(self.status_text, style="bold"))

    def action_toggle_profile(self) -> None:
        self.profile = not self.profile
        self.notify(f"Profiling {'on' if self.profile else 'off'} for the next run", timeout=2)

    # ---- showing a run ---------------------------------------------------------------
    def show_runs(self, runs: Sequence[RunResult]) -> None:
        """Show the last of `runs` (a session's history), compared with the one before it."""
        self.running = None
        self._table.loading = False
        if self.has_focus:  # given to the view while the table was covered
            self._table.focus()
        self.history = list(runs)
        if not runs:
            self.clear()
            return
        self.result = runs[-1]
        self.previous = runs[-2] if len(runs) > 1 else None
        self._fill()
        self._show_status()
        self._show_outputs()
        self._show_history()

    def _fill(self) -> None:
        from fusescope.model import fmt_ms, human_bytes

        assert self.result is not None
        self._table.clear()
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
            lines.append(f"output {o.name}: max error {o.max_error:.3e} (tolerance {o.tolerance:.1e}) ")
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
        return self.result.report() if self.result is not None else ""

    def rows(self) -> list[list[str]]:
        """The table as shown (header first), plain text: what a CSV export writes."""
        out = [[h for _, h, _ in COLUMNS]]
        for k in range(self._table.row_count):
            out.append([c.plain if isinstance(c, Text) else str(c) for c in self._table.get_row_at(k)])
        return out

    def action_copy(self) -> None:
        copy_text(self, self.text, "the run")


def _num(v: float | int | None, spec: str) -> str:
    return "-" if v is None else spec.format(v)


def _error(v: float | None) -> Text:
    if v is None:
        return Text("-")
    return Text(f"{v:.2e}", style="green" if v == 0 else "")


def _delta(now: float | None, before: float | None) -> Text:
    """The change of a time against the previous run: red slower, green faster."""
    if now is None or before is None or before <= 0:
        return Text("-", style="dim")
    change = (now - before) / before
    style = "red" if change > 0.05 else "green" if change < -0.05 else "dim"
    return Text(f"{change:+.0%}", style=style)


def _bar(ms: float | None, total: float) -> Text:
    """The segment's share of the run's time as a bar of eighths."""
    if ms is None or total <= 0:
        return Text("")
    eighths = round(ms / total * BAR_WIDTH * 8)
    full, part = divmod(eighths, 8)
    return Text("█" * full + (" ▏▎▍▌▋▊▉"[part] if part else ""), style="cyan")
