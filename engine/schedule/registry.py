"""The schedulers in priority order; which accept a fusion, and why the others refuse.

Scheduler modules register themselves with `register`; `can_schedule` asks each in
nvFuser's priority order and records every verdict in the trace.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from engine.schedule import tools
from engine.schedule.base import PRIORITY, Scheduler, SchedulerType, Verdict

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace

_SCHEDULERS: dict[SchedulerType, Scheduler] = {}

# Modules that define schedulers; each registers its classes when imported.
_MODULES = ["expr_eval", "no_op", "matmul", "reduction", "resize", "transpose", "pointwise",
            "normalization"]
_loaded = False

def _self_mapping(fusion: Fusion) -> str | None:
    """tools.self_mapping_reason, once per state of the fusion: every kernel scheduler asks."""
    cached = getattr(fusion, "_self_mapping", None)
    if cached is None or cached[0] != fusion.version:
        cached = (fusion.version, tools.self_mapping_reason(fusion))
        fusion._self_mapping = cached  # type: ignore[attr-defined]
    return cached[1]


# Schedulers that generate a kernel (expr_eval and no_op run none, matmul runs through torch).
_KERNEL_SCHEDULERS = {
    SchedulerType.reduction, SchedulerType.resize, SchedulerType.transpose, SchedulerType.pointwise,
    SchedulerType.inner_persistent, SchedulerType.outer_persistent,
    SchedulerType.inner_outer_persistent,
}


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in _MODULES:
        full = f"engine.schedule.{name}"
        try:
            importlib.import_module(full)
        except ModuleNotFoundError as e:
            if e.name != full:  # a real import error inside the module
                raise


def register(cls: type[Scheduler]) -> type[Scheduler]:
    _SCHEDULERS[cls.type] = cls()
    return cls


def get(kind: SchedulerType | str) -> Scheduler:
    _load()
    kind = SchedulerType(kind) if isinstance(kind, str) else kind
    try:
        return _SCHEDULERS[kind]
    except KeyError:
        raise KeyError(f"scheduler {kind} is not available") from None


def available() -> list[SchedulerType]:
    _load()
    return [t for t in PRIORITY if t in _SCHEDULERS]


def verdict(kind: SchedulerType, fusion: Fusion, info: SchedulerRuntimeInfo | None) -> Verdict:
    _load()
    if kind not in _SCHEDULERS:
        return Verdict(kind, False, "not implemented in this engine yet")
    s = _SCHEDULERS[kind]
    # Rules that hold for every scheduler come first, as in nvFuser's checkCanSchedule:
    # the layout op's runtime function needs its offsets and output in global memory,
    # which no scheduler (not even expr_eval, which cannot run it) can change.
    reason = tools.layout_op_buffer_reason(fusion)
    if reason is None and kind in _KERNEL_SCHEDULERS:
        reason = _self_mapping(fusion)
    if reason is None:
        reason = s.reject_compile_time(fusion)
    if reason is None and info is not None:
        reason = s.reject_runtime(fusion, info)
    return Verdict(kind, reason is None, reason or "")


def can_schedule(
    fusion: Fusion, info: SchedulerRuntimeInfo | None = None, trace: Trace | None = None,
    subject: str = "fusion",
) -> tuple[list[Verdict], SchedulerType | None]:
    """Every scheduler's verdict, and the first in priority order that accepts."""
    verdicts = [verdict(t, fusion, info) for t in PRIORITY]
    if trace is not None:
        for v in verdicts:
            trace.event("can_schedule", subject, str(v), scheduler=str(v.scheduler),
                        accepted=v.accepted, reason=v.reason)
    first = next((v.scheduler for v in verdicts if v.accepted), None)
    return verdicts, first
