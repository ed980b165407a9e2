"""The reduction scheduler: inner (fastest dim) and outer reductions without persistence.

Heuristics follow nvFuser's reduction_heuristic shape: threads along the dimension
that is contiguous in memory (TIDx), vectorized loads of up to 16 bytes on it,
several reductions per block (TIDy) when a row is short, and a grid reduction
(blockIdx.y) when there are too few rows to fill the device. The schedule applies
them to the first reduction tensor (the reference), propagates its transforms to
every tensor, then rfactors each reduction so that the serial and vectorized part
is a per-thread partial reduction and only the block/grid part is left to the
reduction itself.

This module holds the scheduler; its parts, shared with the persistent schedulers, live
beside it: the parameters (reduction_params.py), the compile-time checks
(reduction_checks.py), the heuristics (reduction_heuristics.py) and the transforms
(reduction_schedule.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import ReductionProperties, persistent_buffers, reduction_tvs
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.params import HeuristicParams
from engine.schedule.reduction_checks import (
    common_reject,
    post_reduction_broadcast,
    uncovered_reason,
    unequal_reductions,
    unmapped_reductions,
)
from engine.schedule.reduction_heuristics import reduction_heuristics
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.reduction_schedule import schedule_reduction_fusion
from engine.schedule.reduction_schedule import vectorize_io as vectorize_io
from engine.schedule.registry import register

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


@register
class ReductionScheduler(Scheduler):
    type = SchedulerType.reduction

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        why = common_reject(fusion, self.type)
        if why is not None:
            return why
        reds = reduction_tvs(fusion)
        if any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
            return "View may interfere with reduction scheduling."
        pair = unmapped_reductions(reds)
        if pair is not None:
            return f"Un-mapped multi-reduction: {pair[0]} and {pair[1]}"
        if persistent_buffers(fusion, same_pass=True).persistent_buffers:
            return "need persistent buffers that reduction scheduler doesn't handle"
        if post_reduction_broadcast(fusion, reds):
            return "has unsupported post reduction fusion"
        # Parts without a reduction of their own are scheduled from no reference.
        return uncovered_reason(fusion, reds)

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        return unequal_reductions(reduction_tvs(fusion), info)

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> ReductionParams:
        return reduction_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        if not isinstance(params, ReductionParams):
            raise ScheduleError("reduction scheduler needs ReductionParams")
        schedule_reduction_fusion(fusion, params, trace)


def compute_reduction_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo) -> ReductionParams:
    """fd.sched.compute_reduction_heuristics(): the reduction scheduler's parameters."""
    return reduction_heuristics(fusion, info)


__all__ = [
    "ReductionParams", "ReductionProperties", "ReductionScheduler", "compute_reduction_heuristics",
]
