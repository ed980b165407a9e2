"""The CLI's progress display: a rich bar on stderr for `fusescope run` and `show` while they
work, shown only when the work has taken over DELAY_S and only when stdout and stderr are
both terminals (piped output, and a terminal reading piped output, stay exactly as they were).
It is transient: it is cleared before the command prints its result.

`Activity` says which phase a command is in (loading the engine, compiling); `RunBar` follows
a run's reports from the worker (fusescope.progress), a step of the bar per step of the run.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
)
from rich.text import Text

from fusescope.progress import RunProgress, RunTracker, fmt_seconds

DELAY_S = 1.0


def wanted() -> bool:
    """A progress display is for a person at a terminal: stdout and stderr both terminals."""
    return sys.stdout.isatty() and sys.stderr.isatty()


class _Display:
    """A rich Progress that starts only after `delay` seconds (if still open), on `console`."""

    def __init__(self, columns: tuple[ProgressColumn, ...], enabled: bool | None, delay: float,
                 console: Console | None) -> None:
        self.enabled = wanted() if enabled is None else enabled
        self.progress = Progress(*columns, console=console or Console(stderr=True), transient=True)
        self.task = self.progress.add_task("", total=None)
        self._lock = threading.Lock()
        self._closed = False
        self.shown = False
        self._timer = threading.Timer(delay, self._show)
        self._timer.daemon = True

    def _show(self) -> None:
        with self._lock:
            if not self._closed:
                self.progress.start()
                self.shown = True

    def open(self) -> None:
        if self.enabled:
            self._timer.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._timer.cancel()
            if self.shown:
                self.progress.stop()


class Activity:
    """`with Activity() as a: a.say("compiling ...")`: a spinner, the phase and its time."""

    def __init__(self, enabled: bool | None = None, delay: float = DELAY_S, console: Console | None = None) -> None:
        self._display = _Display((SpinnerColumn(), TextColumn("{task.description}"), _Elapsed()),
                                 enabled, delay, console)

    @property
    def shown(self) -> bool:
        return self._display.shown

    def say(self, phase: str) -> None:
        self._display.progress.reset(self._display.task, description=phase, total=None)

    def __enter__(self) -> Activity:
        self._display.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._display.close()


class _Elapsed(ProgressColumn):
    """The time of the task's current phase (reset with each phase)."""

    def render(self, task: Task) -> Text:
        return Text(fmt_seconds(task.elapsed or 0.0), style="progress.elapsed")


class _RunLine(ProgressColumn):
    """The tracker's line: where the run is, for how long (it moves between reports)."""

    def __init__(self, tracker: RunTracker) -> None:
        super().__init__()
        self.tracker = tracker

    def render(self, task: Task) -> Text:
        return Text(self.tracker.line())


class RunBar:
    """`with RunBar(backend, profile) as bar: session.run(..., on_progress=bar.update)`."""

    def __init__(self, backend: str, profile: bool, enabled: bool | None = None, delay: float = DELAY_S,
                 console: Console | None = None) -> None:
        self.tracker = RunTracker(backend, profile)
        self._display = _Display((SpinnerColumn(), BarColumn(bar_width=24), MofNCompleteColumn(),
                                  _RunLine(self.tracker)), enabled, delay, console)

    @property
    def shown(self) -> bool:
        return self._display.shown

    def update(self, p: RunProgress) -> None:
        self.tracker.update(p)
        fraction = self.tracker.fraction
        total = p.steps if fraction is not None else None
        completed = round(fraction * p.steps) if fraction is not None else 0
        # Drawn at each step once shown: a step shorter than rich's refresh interval (a kernel
        # loaded from the cache) would otherwise never appear.
        self._display.progress.update(self._display.task, total=total, completed=completed,
                                      refresh=self._display.shown)

    def __enter__(self) -> RunBar:
        self._display.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._display.close()
