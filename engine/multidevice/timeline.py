"""A multi-device run's timeline on this rank: each step's (or stream chunk's) start and
end, on the stream it ran on.

On the GPU the marks are CUDA events recorded as the steps are queued and read once the run
is over, so the timeline shows the run as it ran (nothing synchronizes between steps) and a
chunk's communication on the side stream beside the compute it overlaps. Elsewhere they are
the host's clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

MAIN, COMM = "main", "comm"  # the compute stream; the side stream chunked collectives run on


@dataclass
class StepTime:
    """One step of one run on this rank: start and end in seconds from the run's start."""

    step: str
    kind: str
    start: float
    end: float
    stream: str = MAIN


class Clock:
    """Marks taken during a run; `finish` turns them into StepTimes in `out` (nothing is
    recorded when `out` is None)."""

    def __init__(self, out: list[StepTime] | None, cuda: bool) -> None:
        self.out = out
        self.cuda = cuda and out is not None
        self._pending: list[tuple[str, str, Any, Any, str]] = []
        self._t0 = self.mark()

    def mark(self, stream: Any = None) -> Any:
        """A mark on `stream` (the current one by default) at this point of the queue."""
        if self.out is None:
            return None
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record(stream)
            return e
        return time.perf_counter()

    def add(self, step: str, kind: str, start: Any, end: Any, stream: str = MAIN) -> None:
        if self.out is not None:
            self._pending.append((step, kind, start, end, stream))

    def finish(self) -> None:
        if self.out is None:
            return
        if self.cuda:
            torch.cuda.synchronize()
        for step, kind, a, b, s in self._pending:
            self.out.append(StepTime(step, kind, self._since(a), self._since(b), s))
        self._pending.clear()

    def _since(self, m: Any) -> float:
        return self._t0.elapsed_time(m) / 1e3 if self.cuda else m - self._t0
