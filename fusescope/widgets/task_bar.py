"""The line above the footer while the app works in the background: what it does (a compile,
or a run's current segment and action), for how long, and the key that cancels it. Hidden
when nothing runs. The elapsed time is counted here, between the worker's reports, so the line
moves even while one step (a g++ build) takes a minute."""

from __future__ import annotations

import time

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from fusescope.progress import RunTracker, fmt_seconds

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S = 0.25


class TaskBar(Static):
    DEFAULT_CSS = """
    TaskBar {
        height: 1;
        padding: 0 1;
        background: $boost;
        display: none;
    }
    TaskBar.-busy {
        display: block;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__("", id=id)
        self.compile_what: str | None = None  # the options being compiled with
        self.compile_started = 0.0
        self.run: RunTracker | None = None
        self.text = ""  # the line as shown, plain
        self._frame = 0
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        self._timer = self.set_interval(TICK_S, self._tick, pause=True)

    @property
    def busy(self) -> bool:
        return self.compile_what is not None or self.run is not None

    def compiling(self, what: str | None) -> None:
        """A compile with options `what` started (None: it ended)."""
        self.compile_what = what
        self.compile_started = time.monotonic()
        self._changed()

    def running(self, tracker: RunTracker | None) -> None:
        """A run started (its tracker) or ended (None)."""
        self.run = tracker
        self._changed()

    def _changed(self) -> None:
        self.set_class(self.busy, "-busy")
        if self._timer is not None:
            self._timer.resume() if self.busy else self._timer.pause()
        self.refresh_line()

    def _tick(self) -> None:
        self._frame += 1
        self.refresh_line()

    def refresh_line(self) -> None:
        parts: list[str] = []
        if self.run is not None:
            parts.append(f"{self.run.title()}: {self.run.line()}")
        if self.compile_what is not None:
            parts.append(f"Compiling ({self.compile_what}) · {fmt_seconds(time.monotonic() - self.compile_started)}")
        self.text = "  |  ".join(parts)
        if not parts:
            self.update("")
            return
        line = Text(SPINNER[self._frame % len(SPINNER)] + " ", style="bold cyan")
        line.append(self.text)
        line.append("  esc cancels", style="dim")
        self.update(line)
