"""Schedulers: a registry in nvFuser's priority order, heuristics, and IterDomain schedules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import ScheduleError
from engine.schedule import registry
from engine.schedule.base import SchedulerType
from engine.schedule.runtime_info import SchedulerRuntimeInfo

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.params import HeuristicParams
    from engine.trace import Trace

__all__ = ["SchedulerType", "schedule_fusion"]


def schedule_fusion(
    fusion: Fusion,
    inputs: Sequence[Any],
    trace: Trace | None = None,
    force: SchedulerType | str | None = None,
) -> tuple[SchedulerType, HeuristicParams | None]:
    """Schedule `fusion` in place with the first scheduler that accepts it (or `force`).

    The fusion is not cloned: callers that keep the unscheduled fusion clone it first.
    Every verdict, heuristic and transform is recorded in `trace`. A forced scheduler
    that refuses, or a fusion no scheduler takes, raises ScheduleError with the reasons.
    """
    info = SchedulerRuntimeInfo(fusion, list(inputs))
    verdicts, first = registry.can_schedule(fusion, info, trace)
    if force is not None:
        kind = SchedulerType(force) if isinstance(force, str) else force
        v = next(v for v in verdicts if v.scheduler == kind)
        if not v.accepted:
            raise ScheduleError(f"cannot force the {kind} scheduler: {v}")
    elif first is None:
        raise ScheduleError("no scheduler accepts this fusion:\n" + "\n".join(str(v) for v in verdicts))
    else:
        kind = first
    scheduler = registry.get(kind)
    params = scheduler.compute_heuristics(fusion, info, trace)
    scheduler.schedule(fusion, params, trace)
    if trace is not None:
        trace.event("schedule", "fusion", f"scheduled by {kind}", scheduler=str(kind))
    return kind, params
