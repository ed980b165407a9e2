"""Scheduler types in nvFuser's priority order, verdicts, and the scheduler interface."""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.params import HeuristicParams
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


class SchedulerType(enum.Enum):
    """Members in nvFuser's priority order; values are nvFuser's printed names."""

    expr_eval = "expr_eval"
    no_op = "no_op"
    matmul = "matmul"
    reduction = "reduction"
    resize = "resize"
    transpose = "transpose"
    pointwise = "pointwise"
    inner_persistent = "inner_persistent"
    outer_persistent = "outer_persistent"
    inner_outer_persistent = "inner_outer_persistent"

    def __str__(self) -> str:
        return self._value_  # `.value` is a slower descriptor; every merge event prints these


PRIORITY: list[SchedulerType] = list(SchedulerType)


@dataclass(frozen=True)
class Verdict:
    scheduler: SchedulerType
    accepted: bool
    reason: str = ""

    def __str__(self) -> str:
        if self.accepted:
            return f"Scheduler _{self.scheduler}_ ***accepted***"
        return f"Scheduler _{self.scheduler}_ ***rejected*** because : {self.reason}"


class Scheduler(ABC):
    """One scheduler: whether it takes a fusion (and why not), its heuristics, its schedule.

    The two checks return None to accept or a reason to refuse, phrased like nvFuser's
    canScheduleRejectReason messages. `schedule` only applies IterDomain transforms,
    memory types, caches and inlining to the fusion's TensorViews.
    """

    type: ClassVar[SchedulerType]

    @abstractmethod
    def reject_compile_time(self, fusion: Fusion) -> str | None:
        """Reason this scheduler cannot take `fusion` whatever the sizes, or None."""

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        """Reason this scheduler cannot take `fusion` at these sizes, or None."""
        return None

    @abstractmethod
    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> HeuristicParams | None:
        """Parameters from the sizes and the device; derivations go to `trace`."""

    @abstractmethod
    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        """Transform the fusion's TensorViews as `params` say."""
