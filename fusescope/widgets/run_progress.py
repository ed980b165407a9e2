"""Under the Run tab's status while a run goes on: a bar over the run's steps, the step the
worker is on with its elapsed time (counted here between the worker's reports, twice a
second), and the segments done with their times. Hidden when no run goes on."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

from fusescope.progress import RunTracker, fmt_seconds
from fusescope.render.graph import scheduler_color

FINISHED_SHOWN = 4  # finished segments listed under the bar, newest last
TICK_S = 0.5


class RunProgressView(Vertical):
    DEFAULT_CSS = """
    RunProgressView {
        height: auto;
        padding: 0 1;
        display: none;
    }
    RunProgressView > ProgressBar {
        height: 1;
    }
    RunProgressView > Static {
        height: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.tracker: RunTracker | None = None
        self.text = ""  # the lines under the bar, plain
        self._bar = ProgressBar(total=None, show_eta=False)
        self._lines = Static("")
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield self._bar
        yield self._lines

    def on_mount(self) -> None:
        self._timer = self.set_interval(TICK_S, self.refresh_progress, pause=True)

    def start(self, tracker: RunTracker) -> None:
        self.tracker = tracker
        self.display = True
        self.refresh_progress()
        if self._timer is not None:
            self._timer.resume()

    def stop(self) -> None:
        self.tracker = None
        self.display = False
        if self._timer is not None:
            self._timer.pause()

    def refresh_progress(self) -> None:
        """The bar and the lines from the tracker (a new report, or the clock)."""
        t = self.tracker
        if t is None:
            return
        fraction = t.fraction
        if fraction is None:
            self._bar.update(total=None)
        else:
            self._bar.update(total=t.latest.steps, progress=round(fraction * t.latest.steps))
        lines = Text(t.line() + "\n")
        for d in t.finished[-FINISHED_SHOWN:]:
            lines.append("  ✓ ", style="green")
            lines.append(f"g{d.segment} ", style="bold")
            lines.append(d.scheduler, style=scheduler_color(d.scheduler))
            lines.append(f" {fmt_seconds(d.took_s)}\n")
        if len(t.finished) > FINISHED_SHOWN:
            lines.append(f"  ({len(t.finished) - FINISHED_SHOWN} earlier segment(s) done)\n", style="dim")
        self.text = lines.plain
        self._lines.update(lines)
