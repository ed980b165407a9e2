"""The Run tab of a multi-device fusion: run it on N ranks (N worker processes, N = the mesh's
size at first; + and - change it), then a row per rank (its outputs' shapes, max error against
its shard of the reference, pass or fail, time) and each rank's timeline of steps, fitted to
the pane's width."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fusescope.messages import MultiRunRequested
from fusescope.widgets.copying import copy_text

if TYPE_CHECKING:
    from fusescope.md_model import MultiDeviceInfo
    from fusescope.md_run import MultiRunResult

MAX_RANKS = 16


class MultiRunView(VerticalScroll, can_focus=True):
    BINDINGS = [
        Binding("f", "run('reference')", "Run reference"),
        Binding("e", "run('emulate')", "Run emulate"),
        Binding("d", "run('cuda')", "Run cuda"),
        Binding("plus,equals_sign", "ranks(1)", "More ranks"),
        Binding("minus", "ranks(-1)", "Fewer ranks"),
        Binding("c", "copy", "Copy text"),
    ]

    DEFAULT_CSS = """
    MultiRunView {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        padding: 0 1;
        overflow-x: auto;
        scrollbar-gutter: stable;  /* the timeline is fitted to a width that a scrollbar keeps */
    }
    MultiRunView:focus {
        border: round $accent;
    }
    MultiRunView > Static {
        width: auto;  /* the table: as wide as its rows (the pane scrolls sideways) */
    }
    MultiRunView > #md-run-status {
        width: 1fr;  /* sentences wrap at the pane's width */
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.border_title = "Run · multi-device"
        self.info: MultiDeviceInfo | None = None
        self.ranks = 1
        self.running: str | None = None
        self.result: MultiRunResult | None = None
        self.status_text = ""
        self._status = Static("", id="md-run-status")
        self._table = Static("", id="md-run-table")
        self._timeline = Static("", id="md-run-timeline")

    def compose(self) -> ComposeResult:
        yield self._status
        yield self._table
        yield self._timeline

    @property
    def text(self) -> str:
        return self.result.report() if self.result is not None else self.status_text

    def setup(self, info: MultiDeviceInfo) -> None:
        self.info = info
        self.ranks = info.world
        self.running = None
        self.result = None
        self._table.update("")
        self._timeline.update("")
        self._idle()

    def _idle(self) -> None:
        assert self.info is not None
        if self.info.error:
            self._say(f"Cannot run: {self.info.error}", "bold red")
            return
        self._say(f"A multi-device fusion ({', '.join(self.info.meshes)}). f runs it on {self.ranks} ranks on the "
                  "reference, e on the emulator, d on GPUs (cuda, one per rank); + / - change the number of "
                  f"ranks (at least {self.info.world}). Each rank is a worker process with the torchrun "
                  "environment.", "dim italic")

    def _say(self, text: str, style: str) -> None:
        self.status_text = text
        self._status.update(Text(text, style=style))

    def action_ranks(self, step: int) -> None:
        if self.info is None or self.running is not None:
            return
        self.ranks = max(self.info.world, min(MAX_RANKS, self.ranks + step))
        self.border_title = f"Run · multi-device · {self.ranks} ranks"
        if self.result is None:
            self._idle()

    def action_run(self, backend: str) -> None:
        if self.info is None or self.info.error:
            self.notify("Nothing to run: the fusion's shardings are invalid", severity="warning")
            return
        if self.running is not None:
            self.notify(f"A run on {self.running} is in progress (esc cancels it)", severity="warning")
            return
        self.post_message(MultiRunRequested(backend, self.ranks))

    def started(self, backend: str, ranks: int) -> None:
        self.running = backend
        self._say(f"Running on {ranks} ranks ({backend}): {ranks} worker processes (esc cancels) …", "bold")

    def show_result(self, result: MultiRunResult) -> None:
        self.running = None
        self.result = result
        style = {"ok": "bold green", "mismatch": "bold red", "cancelled": "bold yellow"}.get(result.status, "bold red")
        self._say(f"{result.status}: {result.message} ({result.ranks} ranks, {result.backend}, "
                  f"{result.wall_s:.1f} s)", style)
        self._table.update(Text(result.table().rstrip("\n")))
        self._fit_timeline()

    def on_resize(self) -> None:
        self._fit_timeline()

    def _fit_timeline(self) -> None:
        """The timeline fitted to the pane's width (its bar narrows, its rows split)."""
        if self.result is not None:
            width = self.scrollable_content_region.width
            self._timeline.update(Text("\n" + self.result.timeline_text(width or None)))

    def action_copy(self) -> None:
        copy_text(self, self.text, "the run")
