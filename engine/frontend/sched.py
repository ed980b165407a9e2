"""`fd.sched`: nvFuser's SchedOperators, user schedules applied to TensorViews.

Every call is recorded (name and arguments) so that a saved fusion writes its
schedule back out and a loaded one replays it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.errors import ScheduleError
from engine.ir.iterdomain import ParallelType
from engine.ir.printer import transforms_block
from engine.ir.tensorview import MemoryType, TensorView

if TYPE_CHECKING:
    from engine.frontend.definition import FusionDefinition


@dataclass
class SchedCall:
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


class SchedOperators:
    def __init__(self, fd: FusionDefinition) -> None:
        self._fd = fd
        self.calls: list[SchedCall] = []

    def _record(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append(SchedCall(name, args, kwargs))

    def _tv(self, name: str, t: Any) -> TensorView:
        if not isinstance(t, TensorView) or t.fusion is not self._fd.fusion:
            raise ScheduleError(f"sched.{name}: expected a tensor of this fusion, got {t!r}")
        return t

    # ---- transforms -----------------------------------------------------------------
    def split(self, tensor: TensorView, dim: int, factor: int, inner_split: bool = True) -> None:
        self._tv("split", tensor).split(dim, factor, inner_split)
        self._record("split", tensor, dim, factor, inner_split=inner_split)

    def merge(self, tensor: TensorView, dim: int) -> None:
        self._tv("merge", tensor).merge(dim)
        self._record("merge", tensor, dim)

    def reorder(self, tensor: TensorView, old2new: dict[int, int]) -> None:
        self._tv("reorder", tensor).reorder(old2new)
        self._record("reorder", tensor, dict(old2new))

    def parallelize(self, tensor: TensorView, axis: int, parallel_type: ParallelType) -> None:
        if not isinstance(parallel_type, ParallelType):
            raise ScheduleError(f"sched.parallelize: expected a ParallelType, got {parallel_type!r}")
        self._tv("parallelize", tensor).parallelize(axis, parallel_type)
        self._record("parallelize", tensor, axis, parallel_type)

    def set_memory_type(self, tensor: TensorView, memory_type: MemoryType) -> None:
        if not isinstance(memory_type, MemoryType):
            raise ScheduleError(f"sched.set_memory_type: expected a MemoryType, got {memory_type!r}")
        self._tv("set_memory_type", tensor).set_memory_type(memory_type)
        self._record("set_memory_type", tensor, memory_type)

    # ---- inspection ---------------------------------------------------------------
    def tensors(self) -> list[TensorView]:
        return [t for t in self._fd.fusion.tensors()]

    def to_string(self, tensor: TensorView) -> str:
        return transforms_block(self._tv("to_string", tensor))

    def user_schedule_ir(self) -> str:
        return str(self._fd.fusion)

    def is_reduction(self, tensor: TensorView) -> bool:
        return any(i.is_reduction for i in self._tv("is_reduction", tensor).domain.logical)
