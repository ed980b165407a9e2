"""Where a run is: the reports the worker sends as it goes (RunProgress), the child's side that
numbers and sends them (Reporter), and the caller's side that keeps them (RunTracker), which
the TUI's Run tab and task bar and the CLI's progress bar all read.

A run's steps: preparing the fusion (compiled in the worker, or found in its cache), then one
step per segment in run order (the reference, the kernel's build, the run), checking the
outputs against the reference, and, when asked for, profiling and the stream timeline. Every
report is sent when the worker starts a step or an action within it, so what the UI says is
the worker's real position. Plain data only: no engine, no Textual.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunProgress:
    """One report: the worker is now at `action` of step `step` of `steps`."""

    step: int  # the step under way, 1-based; 0 before the worker has taken the job
    steps: int  # steps in all; 0 while unknown (before the fusion is compiled)
    action: str  # what it does now: "building the kernel (g++)", "checking the outputs", ...
    elapsed_s: float = 0.0  # since the worker took the job, by its clock
    segment: int | None = None  # the segment of a per-segment step (its id)
    index: int = 0  # that segment's place in run order, 1-based
    segments: int = 0  # segments in all
    scheduler: str = ""
    took_s: float | None = None  # set when a segment is done: its wall time, build included

    @property
    def done(self) -> bool:
        return self.took_s is not None

    def where(self) -> str:
        """"segment 3 of 7 (g2 resize)", or the step's own words outside the segments."""
        if self.segment is None:
            return self.action
        return f"segment {self.index} of {self.segments} (g{self.segment} {self.scheduler})"


STARTING = RunProgress(0, 0, "starting the worker process (it imports torch and the engine)")


class Reporter:
    """In the worker: numbers the steps of one run and sends a RunProgress for each action."""

    def __init__(self, send: Callable[[RunProgress], None], clock: Callable[[], float] = time.perf_counter) -> None:
        self._send = send
        self._clock = clock
        self._start = clock()
        self.step_no = 0
        self.steps = 0
        self.segments = 0
        self._segment: tuple[int, int, str] | None = None  # (id, index, scheduler) under way
        self._segment_start = 0.0

    def plan(self, segments: int, after: int) -> None:
        """The fusion is ready: `segments` segments, then `after` steps (checks, profiling)."""
        self.segments = segments
        self.steps = self.step_no + segments + after

    def step(self, action: str) -> None:
        """A step outside the segments starts."""
        self.step_no += 1
        self._segment = None
        self._emit(action)

    def segment(self, index: int, sid: int, scheduler: str) -> None:
        """Segment `sid` (the `index`-th in run order, 1-based) starts."""
        self.step_no += 1
        self._segment = (sid, index, scheduler)
        self._segment_start = self._clock()

    def action(self, action: str) -> None:
        """The segment under way starts `action`."""
        self._emit(action)

    def segment_done(self) -> None:
        self._emit("done", took_s=self._clock() - self._segment_start)

    def _emit(self, action: str, took_s: float | None = None) -> None:
        sid, index, scheduler = self._segment if self._segment is not None else (None, 0, "")
        self._send(RunProgress(self.step_no, self.steps, action, self._clock() - self._start, sid, index,
                               self.segments, scheduler, took_s))


@dataclass(frozen=True)
class SegmentDone:
    segment: int
    scheduler: str
    took_s: float


class RunTracker:
    """In the caller: the reports of one run so far, and how long the current step has taken
    (by the caller's clock, so that it keeps counting between reports)."""

    def __init__(self, backend: str, profile: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.backend = backend
        self.profile = profile
        self._clock = clock
        self.started = clock()
        self.latest: RunProgress = STARTING
        self.step_started = self.started
        self.finished: list[SegmentDone] = []

    def update(self, p: RunProgress) -> None:
        if p.done:
            assert p.segment is not None and p.took_s is not None
            self.finished.append(SegmentDone(p.segment, p.scheduler, p.took_s))
        elif (p.step, p.action) != (self.latest.step, self.latest.action):
            self.step_started = self._clock()
        self.latest = p

    @property
    def fraction(self) -> float | None:
        """Steps done over steps in all; None while the number of steps is unknown."""
        p = self.latest
        if p.steps <= 0:
            return None
        done = p.step if p.done else p.step - 1
        return max(0.0, min(1.0, done / p.steps))

    def elapsed(self) -> float:
        return self._clock() - self.started

    def step_elapsed(self) -> float:
        return self._clock() - self.step_started

    def title(self) -> str:
        """"Running on emulate, profiling off"."""
        profiling = "on" if self.profile and self.backend != "reference" else "off"
        return f"Running on {self.backend}, profiling {profiling}"

    def line(self) -> str:
        """What the worker does now and for how long: one line for a status bar."""
        p = self.latest
        step = f"step {p.step} of {p.steps}: " if p.steps and p.segment is None else ""
        action = "finished" if p.done else p.action
        where = f"{p.where()}: {action}" if p.segment is not None else f"{step}{action}"
        return f"{where} · {fmt_seconds(self.step_elapsed())} (run {fmt_seconds(self.elapsed())})"


def fmt_seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(s), 60)
    return f"{m} min {sec:02d} s"
