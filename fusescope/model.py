"""The one adapter between the debugger and the engine: the only fusescope module that imports
`engine`. Widgets and the CLI see plain data (strings, dataclasses), never engine objects, so
the UI can't reach into the IR and the engine can change behind this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engine import load_fusion
from engine.errors import EngineError, FusionDefinitionError, ScheduleError
from engine.ir.printer import transforms_block
from engine.schedule import schedule_fusion
from engine.trace import Trace

if TYPE_CHECKING:
    from engine import FusionDefinition

Role = Literal["input", "output", "intermediate"]


class LoadError(Exception):
    """A fusion could not be loaded; the message is one line meant for the user."""


@dataclass(frozen=True)
class TensorInfo:
    name: str  # "T3", the name the listing uses
    text: str  # the full TensorView string, e.g. T0_g_float[bS0{1}, iS1{4096}]
    dtype: str  # CUDA spelling, as in the listing: float, __bfloat, ...
    role: Role
    transforms: str  # the seed-001 transform block


@dataclass(frozen=True)
class ValueInfo:
    """A fusion input or output as the listing prints it (a tensor or a scalar)."""

    name: str
    text: str
    is_tensor: bool


@dataclass
class Session:
    """A loaded fusion and the text views derived from it."""

    fd: FusionDefinition
    path: Path | None
    title: str
    listing: str
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    # Computed on first use (it transforms a clone, which takes a moment on big fusions).
    _schedule: ScheduleResult | None = field(default=None, repr=False)

    @classmethod
    def from_definition(
        cls, fd: FusionDefinition, path: Path | None = None, title: str | None = None
    ) -> Session:
        fusion = fd.fusion
        ins = {id(v) for v in fusion.inputs}
        outs = {id(v) for v in fusion.outputs}
        tensors: dict[str, TensorInfo] = {}
        for tv in fusion.tensors():
            role: Role = "input" if id(tv) in ins else "output" if id(tv) in outs else "intermediate"
            tensors[tv.short_name] = TensorInfo(
                name=tv.short_name,
                text=str(tv),
                dtype=tv.dtype.cuda_name,
                role=role,
                transforms=transforms_block(tv),
            )
        return cls(
            fd=fd,
            path=path,
            title=title or (path.name if path is not None else "untitled fusion"),
            listing=str(fusion),
            inputs=[_value_info(v) for v in fusion.inputs],
            outputs=[_value_info(v) for v in fusion.outputs],
            tensors=tensors,
        )

    def transforms(self, name: str) -> str:
        """The transform block of tensor `name` (e.g. "T7"); KeyError names the tensor."""
        try:
            return self.tensors[name].transforms
        except KeyError:
            known = ", ".join(self.tensors) or "none"
            raise KeyError(f"no tensor {name} in {self.title} (tensors: {known})") from None

    @property
    def computed_schedule(self) -> ScheduleResult | None:
        """The schedule if it was computed already, without computing it."""
        return self._schedule

    def schedule(self) -> ScheduleResult:
        """The whole fusion scheduled at the file's example inputs (cached per session)."""
        if self._schedule is None:
            self._schedule = compute_schedule(self.fd)
        return self._schedule


def _value_info(v: object) -> ValueInfo:
    from engine.ir.tensorview import TensorView

    if isinstance(v, TensorView):
        return ValueInfo(v.short_name, str(v), True)
    return ValueInfo(str(v), str(v), False)


def load_session(path: str | Path) -> Session:
    """Read a fusion file (nvFuser's python-frontend format) without running it.

    Every failure the user can cause (missing file, unreadable file, a FusionFileError or
    FusionDefinitionError from the engine) becomes a LoadError with one line of text.
    """
    p = Path(path)
    if not p.exists():
        raise LoadError(f"no such file: {p}")
    if p.is_dir():
        raise LoadError(f"{p} is a folder, not a fusion file")
    try:
        fd = load_fusion(str(p))
    except (EngineError, OSError, UnicodeDecodeError) as e:
        raise LoadError(_one_line(f"{type(e).__name__}: {e}")) from e
    return Session.from_definition(fd, path=p)


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines)


# ---- scheduling ---------------------------------------------------------------------------
# No segmenter exists yet, so the whole fusion is one group; every view says so.
WHOLE_FUSION_NOTE = "No segmenter yet: the whole fusion is scheduled as one group."
DECISION_KINDS = ("can_schedule", "heuristic", "schedule")


@dataclass(frozen=True)
class VerdictInfo:
    scheduler: str  # nvFuser's name, e.g. "pointwise"
    accepted: bool
    reason: str  # empty when accepted
    text: str  # nvFuser's line: "Scheduler _pointwise_ ***rejected*** because : ..."


@dataclass(frozen=True)
class EventInfo:
    kind: str  # "can_schedule", "heuristic", "transform", "schedule"
    subject: str
    message: str
    text: str  # "[kind] subject: message", as the engine prints an event


@dataclass(frozen=True)
class ScheduleResult:
    """What the schedulers decided for the fusion; `error` says why there is no schedule.

    Verdicts and events are kept even when scheduling failed, since "why did no scheduler
    take it" is exactly what the user wants to see then.
    """

    verdicts: list[VerdictInfo]
    scheduler: str | None
    params: str  # str(params), nvFuser's scheduler_params block; "" without a schedule
    derivation: tuple[str, ...]
    scheduled_ir: str  # the scheduled clone's listing (parallel types, ca_pos)
    events: list[EventInfo]
    tensors: dict[str, str]  # tensor name -> its transform block after scheduling
    error: str | None = None

    @property
    def decisions(self) -> list[EventInfo]:
        return [e for e in self.events if e.kind in DECISION_KINDS]

    def verdicts_text(self) -> str:
        lines = [v.text for v in self.verdicts]
        return "\n".join(lines) + "\n" if lines else ""

    def params_text(self) -> str:
        if self.scheduler is None:
            return ""
        if not self.params.strip():
            return f"The {self.scheduler} scheduler takes no heuristic parameters.\n"
        return self.params.strip("\n") + "\n"

    def report(self) -> str:
        """The `show --schedule` text: verdicts, the accepting scheduler, params, scheduled IR."""
        out = [WHOLE_FUSION_NOTE, ""]
        if self.verdicts:
            out += ["Scheduler verdicts (priority order):", self.verdicts_text()]
        if self.scheduler is not None:
            out += [f"Accepted by: {self.scheduler}", "", self.params_text()]
            if self.derivation:
                out += ["Derivation:", *(f"  {d}" for d in self.derivation), ""]
            out += ["Scheduled IR:", self.scheduled_ir.rstrip("\n"), ""]
        if self.error:
            out += [f"No schedule: {self.error}", ""]
        return "\n".join(out)

    def why(self) -> str:
        """The decision events (verdicts, heuristic derivations, the choice), one per line.

        An event whose message spans lines (a params block) is joined with " | " so that
        each line of the output is one event, for grep and scripts.
        """
        lines = [_one_line(e.text) for e in self.decisions]
        return "\n".join(lines) + "\n" if lines else ""


def compute_schedule(fd: FusionDefinition) -> ScheduleResult:
    """Schedule a clone of `fd`'s fusion at the file's example inputs, catching every failure.

    A missing inputs list, a ScheduleError (no scheduler accepts) and a crash inside a
    scheduler all become `error`, one line; the loaded fusion itself is never touched.
    """
    try:
        inputs = fd.example_inputs()
    except FusionDefinitionError as e:
        return _failed(None, f"no example inputs: {_one_line(str(e))}")
    except Exception as e:  # building tensors from the file's specs can fail in many ways
        return _failed(None, f"could not build the example inputs: {type(e).__name__}: {_one_line(str(e))}")
    fusion, _ = fd.fusion.clone()
    trace = Trace()
    try:
        kind, params = schedule_fusion(fusion, inputs, trace)
    except ScheduleError as e:
        # The engine's message lists the verdicts after its first line; they are kept apart.
        first = str(e).strip().splitlines()[0].rstrip(": ")
        if first.startswith("no scheduler accepts"):
            first += " as one group (no segmenter yet to split it; the verdicts say why)"
        return _failed(trace, first)
    except Exception as e:  # an engine bug: report it, keep the decisions made so far
        return _failed(trace, f"the scheduler crashed: {type(e).__name__}: {_one_line(str(e))}")
    return ScheduleResult(
        verdicts=_verdicts(trace),
        scheduler=str(kind),
        params=str(params) if params is not None else "",
        derivation=tuple(params.derivation) if params is not None else (),
        scheduled_ir=str(fusion),
        events=_events(trace),
        tensors={tv.short_name: transforms_block(tv) for tv in fusion.tensors()},
    )


def failed_schedule(error: str) -> ScheduleResult:
    """A result that is only an error (for callers that failed before any decision)."""
    return _failed(None, error)


def _failed(trace: Trace | None, error: str) -> ScheduleResult:
    return ScheduleResult(
        verdicts=_verdicts(trace) if trace is not None else [],
        scheduler=None,
        params="",
        derivation=(),
        scheduled_ir="",
        events=_events(trace) if trace is not None else [],
        tensors={},
        error=error,
    )


def _verdicts(trace: Trace) -> list[VerdictInfo]:
    # The trace's can_schedule events carry each verdict as data (see registry.can_schedule).
    return [
        VerdictInfo(str(e.data["scheduler"]), bool(e.data["accepted"]), str(e.data.get("reason", "")), e.message)
        for e in trace.of_kind("can_schedule")
    ]


def _events(trace: Trace) -> list[EventInfo]:
    return [EventInfo(e.kind, e.subject, e.message, str(e)) for e in trace]
