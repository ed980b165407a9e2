"""Matmul: nvFuser's MatmulScheduler generates mma kernels. This engine evaluates
matmul and linear through torch (the expr_eval scheduler), so this scheduler refuses
every fusion, saying which scheduler takes its matmuls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.quant_exprs import CutlassNvfp4GroupedMmaOp
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.registry import register

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.params import HeuristicParams
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace

MATMUL_EXPRS = (ex.MatmulOp, ex.LinearOp, CutlassNvfp4GroupedMmaOp)
DELEGATED = "matmul ops are evaluated by the expr_eval scheduler in this engine"


@register
class MatmulScheduler(Scheduler):
    type = SchedulerType.matmul

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        if any(isinstance(e, MATMUL_EXPRS) for e in fusion.exprs()):
            return DELEGATED
        return "No matmul patterns were found"

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> HeuristicParams | None:
        raise ScheduleError(f"matmul scheduler: {DELEGATED}")

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        raise ScheduleError(f"matmul scheduler: {DELEGATED}")
