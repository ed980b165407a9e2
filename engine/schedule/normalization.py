"""Persistent (normalization) schedulers: inner, outer and combined inner-outer.

A normalization reads a row, reduces it, and uses the row again with the result
(softmax, layer and RMS norm, layer-norm backward). The row is a persistent buffer:
these schedulers keep it on chip across the reduction, in registers or, when it is
too large for them (or on sm_90 and later, the inner-outer case, whose inputs are staged
in circular-buffered shared memory), in shared memory, and refuse when it fits neither. A buffer that can be recomputed
from inputs through pointwise ops is projected when that is smaller (a bf16 input
instead of its float cast): its uses after the reduction recompute it from the
inputs, and the cached inputs become the buffers.

This module holds the three schedulers; their parts live beside it: the on-chip budgets
(persistent_budget.py), the projection to inputs (persistent_projection.py), the checks
(persistent_checks.py), the inner and outer heuristics (persistent_heuristics.py) and
schedule (persistent_schedule.py), the inner-outer heuristic (inner_outer_heuristics.py)
and schedule (inner_outer_schedule.py). The reduction scheduler's parameters, checks,
heuristics and transforms (reduction_*.py) serve them too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from engine.analysis.persistent import is_fastest_dim_reduction, reduction_properties, reduction_tvs
from engine.errors import ScheduleError
from engine.ir.logical_map import consumers_of
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.inner_outer_heuristics import (
    ROWS_PER_STEP,
    STAGES,
    inner_outer_heuristics,
    inner_outer_sizes,
    welford_in_row_loop,
)
from engine.schedule.inner_outer_multi_wave import MIN_BLOCKS_PER_SM
from engine.schedule.inner_outer_schedule import schedule_inner_outer, smem_allocation_from_loop
from engine.schedule.params import HeuristicParams
from engine.schedule.persistent_budget import (
    buffer_bytes,
    kept_buffers,
    kept_bytes,
    register_budget,
    smem_budget,
)
from engine.schedule.persistent_checks import fits, persistent_compile_reject
from engine.schedule.persistent_checks import inner_outer_shape_reason as inner_outer_shape_reason
from engine.schedule.persistent_fit import (
    Schedule,
    column_elements,
    fewer_blocks,
    inner_outer_shapes,
    inner_shapes,
    outer_shapes,
    row_elements,
    storage_families,
)
from engine.schedule.persistent_heuristics import inner_persistent_heuristics, outer_persistent_heuristics
from engine.schedule.persistent_projection import project_to_inputs
from engine.schedule.persistent_schedule import schedule_inner_or_outer
from engine.schedule.reduction_checks import unequal_reductions
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.reduction_schedule import schedule_reduction_fusion
from engine.schedule.registry import register

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


class _Persistent(Scheduler):
    def reject_compile_time(self, fusion: Fusion) -> str | None:
        return persistent_compile_reject(fusion, self.type)

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        why = unequal_reductions(reduction_tvs(fusion), info)
        if why is not None:
            return why
        size, _, _ = buffer_bytes(fusion, info)
        return fits(size, info.device)

    def fit_shapes(self, fusion: Fusion, info: SchedulerRuntimeInfo, p: ReductionParams) -> tuple[
            list[list[ReductionParams]], Callable[[ReductionParams], int], Schedule]:
        """The block shapes `p`'s heuristic may fall back to (engine.schedule.persistent_fit),
        the elements a thread holds of each, and the schedule that realizes them."""
        dev = info.device
        props = reduction_properties(reduction_tvs(fusion)[0], info)
        red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
        _, project, pb = buffer_bytes(fusion, info)
        names = tuple(t.short_name for t in kept_buffers(pb, project))
        size = kept_bytes(pb, project, info, it_n)  # in shared memory: all of them at once
        if p.fastest_dim:
            families = storage_families(p, names, size, max(1, p.lparams.bdimy),
                                        lambda q: inner_shapes(q, red_n, it_n, dev), smem_budget(dev))
            return families, row_elements, schedule_inner_or_outer
        families = storage_families(p, names, size, p.lparams.bdimx * p.unroll_factor_iter_dom,
                                    lambda q: outer_shapes(q, red_n, it_n, dev), smem_budget(dev))
        return families, column_elements, schedule_inner_or_outer


@register
class InnerPersistentScheduler(_Persistent):
    type = SchedulerType.inner_persistent

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        why = super().reject_runtime(fusion, info)
        if why is not None:
            return why
        props = reduction_properties(reduction_tvs(fusion)[0], info)
        dev = info.device
        if (props.total_reduction_numel >= dev.max_threads_per_sm * 4
                and props.total_iteration_numel < max(1, dev.sm_count // 8)):
            return "not enough blocks"
        return None

    def compute_heuristics(self, fusion: Fusion, info: SchedulerRuntimeInfo,
                           trace: Trace | None = None) -> ReductionParams:
        return inner_persistent_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        schedule_inner_or_outer(fusion, _check(params), trace)


@register
class OuterPersistentScheduler(_Persistent):
    type = SchedulerType.outer_persistent

    def compute_heuristics(self, fusion: Fusion, info: SchedulerRuntimeInfo,
                           trace: Trace | None = None) -> ReductionParams:
        return outer_persistent_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        schedule_inner_or_outer(fusion, _check(params), trace)


@register
class InnerOuterPersistentScheduler(_Persistent):
    type = SchedulerType.inner_outer_persistent

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        size, partial, *_ = inner_outer_sizes(fusion, info)
        dev = info.device
        # Inputs may go to shared memory; the partial outer results stay in registers.
        if partial * ROWS_PER_STEP > register_budget(dev) or size > max(
                register_budget(dev), smem_budget(dev) // (ROWS_PER_STEP * STAGES)):
            return "not enough registers or shared memory for persistence"
        return welford_in_row_loop(fusion, info)

    def compute_heuristics(self, fusion: Fusion, info: SchedulerRuntimeInfo,
                           trace: Trace | None = None) -> ReductionParams:
        return inner_outer_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        schedule_inner_outer(fusion, _check(params), trace)

    def fit_shapes(self, fusion: Fusion, info: SchedulerRuntimeInfo, p: ReductionParams) -> tuple[
            list[list[ReductionParams]], Callable[[ReductionParams], int], Schedule]:
        """The combined schedule's block shapes (its inputs stay where the heuristic put them).
        A multi-wave launch first holds fewer blocks an SM, down to MIN_BLOCKS_PER_SM; then
        the schedule of several rows per block and its shapes."""
        ref = next(r for r in reduction_tvs(fusion) if is_fastest_dim_reduction(r))
        props = reduction_properties(ref, info)
        red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
        if p.blocks_per_sm > 1:
            rows = inner_outer_heuristics(fusion, info, None, multi_wave=False)
            return ([fewer_blocks(p, MIN_BLOCKS_PER_SM, it_n, info.device),
                     inner_outer_shapes(rows, red_n, it_n, info.device)], row_elements, schedule_inner_outer)
        return [inner_outer_shapes(p, red_n, it_n, info.device)], row_elements, schedule_inner_outer


def _check(params: HeuristicParams | None) -> ReductionParams:
    if not isinstance(params, ReductionParams) or not params.persistent_kernel:
        raise ScheduleError("persistent schedulers need persistent ReductionParams")
    return params


__all__ = [
    "InnerOuterPersistentScheduler", "InnerPersistentScheduler", "OuterPersistentScheduler",
    "project_to_inputs", "smem_allocation_from_loop", "consumers_of", "replace",
    "schedule_reduction_fusion",
]
