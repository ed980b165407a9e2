"""NoOp: fusions with nothing to compute (every output is empty or has only broadcast
axes), forwarded without a schedule, as nvFuser's NoOpScheduler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.registry import register

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.ir.iterdomain import IterDomain
    from engine.schedule.params import HeuristicParams
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


def _is_zero(i: IterDomain) -> bool:
    return i.extent.is_const and i.extent.value == 0


def is_no_op(fusion: Fusion) -> bool:
    """No exprs, or every tensor output is statically empty (a zero extent)."""
    if not fusion.exprs():
        return True
    outs = [o for o in fusion.outputs if isinstance(o, TensorView)]
    return bool(outs) and all(
        any(_is_zero(i) for i in o.domain.logical if not i.is_reduction) for o in outs
    )


@register
class NoOpScheduler(Scheduler):
    type = SchedulerType.no_op

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        if is_no_op(fusion):
            return None
        # A reduction over elements has work to do, unless its output is empty.
        for e in fusion.exprs():
            if not isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
                continue
            for out in e.outputs:
                if isinstance(out, TensorView) and not any(
                    _is_zero(i) for i in out.domain.logical if not i.is_reduction
                ):
                    return "reduction of non-zero elements is not supported"
        for out in fusion.outputs:
            if not isinstance(out, TensorView):
                continue
            if any(not (i.is_broadcast or i.is_reduction) for i in out.domain.loop):
                return "output has a concrete dimension"
        return tools.memory_promotion_reason(fusion)

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> HeuristicParams | None:
        if trace is not None:
            trace.event("heuristic", "no_op", "no heuristics: nothing to compute")
        return None

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        if trace is not None:
            trace.event("transform", "no_op", "no transforms: nothing to compute")
