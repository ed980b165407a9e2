"""Messages that widgets and workers send up to the app (Textual accepts dataclass messages).

Data goes down as attributes and method calls; facts come up as these messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

if TYPE_CHECKING:
    from fusescope.md_run import MultiRunResult
    from fusescope.model import CompileResult, RunResult, Session
    from fusescope.progress import RunProgress


class TensorCursor(Protocol):
    """A widget whose cursor is on one tensor (or none)."""

    @property
    def current_tensor(self) -> str | None: ...


@dataclass
class TensorSelected(Message):
    """The user put the cursor on a TensorView (e.g. "T3") in `source` (a widget whose cursor
    has moved on by the time the app reads this makes it stale)."""

    name: str
    source: TensorCursor | None = None


@dataclass
class SessionLoaded(Message):
    """A load worker read a fusion file successfully."""

    session: Session


@dataclass
class SessionLoadFailed(Message):
    """A load worker failed; `error` is one line for the user."""

    path: str
    error: str


@dataclass
class SegmentSelected(Message):
    """The user put the cursor on segment `segment` (its id) in some view."""

    segment: int


@dataclass
class CompileFinished(Message):
    """A compile worker finished for `session` (the result may carry an error)."""

    session: Session
    result: CompileResult
    comparison: str | None = None  # what changed against the options before (after a change)


@dataclass
class RunRequested(Message):
    """The Run view asks for a run of the whole fusion on `backend`."""

    backend: str
    profile: bool


@dataclass
class RunProgressed(Message):
    """The worker reported where a run of `session` is (sent from the run's thread)."""

    session: Session
    progress: RunProgress


@dataclass
class RunFinished(Message):
    """A run finished (or failed, crashed, timed out, was cancelled: see result.status) for
    `session`."""

    session: Session
    result: RunResult


@dataclass
class MultiRunRequested(Message):
    """The Run tab of a multi-device fusion asks for a run on `ranks` ranks on `backend`."""

    backend: str
    ranks: int


@dataclass
class MultiRunFinished(Message):
    """A multi-device run of `session` ended (see result.status: ok, mismatch, error, cancelled)."""

    session: Session
    result: MultiRunResult
