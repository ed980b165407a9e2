"""The one debug channel: text snapshots of pipeline stages and structured decision events.

Stages are keyed by nvFuser's dump names (`fusion_ir_original`, `segmented_fusion`,
`scheduler_params`, `kernel_ir`, `cuda_kernel`, `host_ir`, ...). Events record every
decision the engine takes (a scheduler's verdict, a merge attempt, a heuristic value
and what it was derived from) as data, so the TUI and `fusescope show --why` can
render them without parsing prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Event:
    kind: str  # e.g. "can_schedule", "merge", "forward", "heuristic", "transform", "lowering"
    subject: str  # what it is about: a segment "g3", a tensor "T4", a scheduler "pointwise"
    message: str  # one readable line, phrased like nvFuser's debug output where it has one
    data: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"[{self.kind}] {self.subject}: {self.message}"


@dataclass
class Trace:
    stages: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    def stage(self, name: str, text: str) -> None:
        """Keep the text of a stage; a stage recorded twice keeps both, numbered."""
        key, n = name, 1
        while key in self.stages:
            n += 1
            key = f"{name}#{n}"
        self.stages[key] = text

    def event(self, kind: str, subject: str, message: str, **data: Any) -> Event:
        e = Event(kind, subject, message, data)
        self.events.append(e)
        return e

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def about(self, subject: str) -> list[Event]:
        return [e for e in self.events if e.subject == subject]

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)
