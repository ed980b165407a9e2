"""The Run tab: run the whole fusion on the emulator, the reference or the GPU (in the worker
process), and a row per segment: time, bytes, GB/s, % of peak bandwidth, max error against the
reference, registers and occupancy; then every output's error and the verdict."""

from __future__ import annotations

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
    from fusescope.model import RunResult

PLACEHOLDER = ("No run yet. e runs on the emulator (the generated CUDA, compiled with g++, on the CPU), "
               "f on the reference evaluator, d on the GPU (cuda); p turns profiling on or off.")
COLUMNS = ("seg", "scheduler", "time", "bytes", "GB/s", "% peak", "max error", "regs", "occupancy")


class RunView(Vertical):
    BINDINGS = [
        Binding("e", "run('emulate')", "Run emulate"),
        Binding("f", "run('reference')", "Run reference"),
        Binding("d", "run('cuda')", "Run cuda"),
        Binding("p", "toggle_profile", "Profile on/off"),
        Binding("c", "copy", "Copy text"),
    ]

    DEFAULT_CSS = """
    RunView {
        height: 1fr;
    }
    RunView > #run-status {
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
        self.profile = True
        self.running: str | None = None  # the back end of the run in progress
        self.selected: int | None = None
        self._status = Static(Text(PLACEHOLDER, style="dim italic"), id="run-status")
        self._table: DataTable[Text | str] = DataTable(id="run-table", cursor_type="row", zebra_stripes=True)
        self._table.border_title = "Segments"
        self._outputs = Static("", id="run-outputs")

    def compose(self) -> ComposeResult:
        yield self._status
        yield self._table
        yield self._outputs

    def on_mount(self) -> None:
        self._table.add_columns(*COLUMNS)

    def clear(self) -> None:
        self.result = None
        self.running = None
        self._table.clear()
        self._table.loading = False
        self._status.update(Text(PLACEHOLDER, style="dim italic"))
        self._outputs.update("")

    def action_run(self, backend: str) -> None:
        if self.running is not None:
            self.notify(f"A run on {self.running} is in progress", severity="warning")
            return
        self.post_message(RunRequested(backend, self.profile))

    def started(self, backend: str) -> None:
        """The app started a run: say so and show the loading indicator until it ends."""
        self.running = backend
        self._table.loading = True
        what = "profiling" if self.profile and backend != "reference" else "running"
        self._status.update(Text(f"{what.capitalize()} on {backend} in the worker process…", style="bold"))

    def action_toggle_profile(self) -> None:
        self.profile = not self.profile
        self.notify(f"Profiling {'on' if self.profile else 'off'} for the next run", timeout=2)

    def show_run(self, result: RunResult) -> None:
        from fusescope.model import fmt_ms, human_bytes

        self.result = result
        self.running = None
        self._table.loading = False
        self._table.clear()
        for s in result.segments:
            self._table.add_row(
                Text(f"g{s.segment}", style="bold"),
                Text(s.scheduler, style=scheduler_color(s.scheduler)),
                fmt_ms(s.time_ms),
                human_bytes(s.bytes),
                _num(s.gbps, "{:.1f}"),
                _num(s.peak_fraction, "{:.1%}"),
                _error(s.max_error),
                _num(s.registers, "{}"),
                _num(s.occupancy, "{:.0%}"),
                key=str(s.segment),
            )
        style = {"ok": "bold green", "mismatch": "bold red"}.get(result.status, "bold red")
        status = Text(f"{result.backend}: {result.status} · {result.message}", style=style)
        if result.segments:
            status.append(f"\n{result.device} · time: {result.timing} · total {fmt_ms(result.total_ms)}",
                          style="dim")
        self._status.update(status)
        lines = Text()
        for o in result.outputs:
            lines.append(f"output {o.name}: max error {o.max_error:.3e} (tolerance {o.tolerance:.1e}) ")
            lines.append("ok\n" if o.ok else "MISMATCH\n", style="green" if o.ok else "bold red")
        self._outputs.update(lines)
        if self.selected is not None:
            self.select_segment(self.selected)

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
        # and echoing that would undo the selection made elsewhere).
        if not self._table.has_focus:
            return
        key = event.row_key.value
        if key is not None and int(key) != self.selected:
            self.selected = int(key)
            self.post_message(SegmentSelected(int(key)))

    @property
    def text(self) -> str:
        return self.result.report() if self.result is not None else ""

    def action_copy(self) -> None:
        copy_text(self, self.text, "the run")


def _num(v: float | int | None, spec: str) -> str:
    return "-" if v is None else spec.format(v)


def _error(v: float | None) -> Text:
    if v is None:
        return Text("-")
    return Text(f"{v:.2e}", style="green" if v == 0 else "")
