"""`fd.sched`: nvFuser's SchedOperators, user schedules applied to TensorViews.

Every successful call is recorded as a SchedCall with its arguments as the user gave
them (tensors, ints, enums, lists, dicts), so that save_fusion writes the schedule
back as `fd.sched.<name>(...)` lines and a loaded file replays it. A refused call
(ScheduleError) changes nothing and is not recorded.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.errors import ScheduleError
from engine.ir.iterdomain import ParallelType
from engine.ir.printer import transforms_block
from engine.ir.tensorview import MemoryType, TensorView
from engine.ir.tensorview import inline_all_at as _inline_all_at
from engine.ir.tensorview import inline_most as _inline_most
from engine.ir.tensorview import parallelize_like as _parallelize_like
from engine.ir.tensorview import transform_like as _transform_like

if TYPE_CHECKING:
    from engine.frontend.definition import FusionDefinition


class CacheOp(enum.Enum):
    """nvFuser's CacheOp (python names); the value is the printed `cache_op=` text."""

    Unspecified = "Unspecified"
    AllLevels = "AllLevels"
    Streaming = "Streaming"
    Global = "Global"


class LoadStoreOpType(enum.Enum):
    """nvFuser's LoadStoreOpType (python names); the value is the printed op kind."""

    Set = "Set"
    SegmenterSet = "SegmenterSet"
    LdMatrix = "LdMatrix"
    CpAsync = "CpAsync"
    CpAsyncBulk = "CpAsyncBulk"
    CpAsyncBulkTensorTile = "CpAsyncBulkTensorTile"
    StMatrix = "StMatrix"


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

    def _tvs(self, name: str, ts: Iterable[Any] | None) -> list[TensorView] | None:
        """None for an empty selection: nvFuser's "all tensors"."""
        if ts is None:
            return None
        if isinstance(ts, TensorView) or not isinstance(ts, Iterable):
            raise ScheduleError(f"sched.{name}: expected a list of tensors, got {ts!r}")
        out = [self._tv(name, t) for t in ts]
        return out or None

    @staticmethod
    def _int(name: str, what: str, x: Any) -> int:
        if not isinstance(x, int) or isinstance(x, bool):
            raise ScheduleError(f"sched.{name}: {what} must be an int, got {x!r}")
        return x

    # ---- transforms -----------------------------------------------------------------
    def split(self, arg: TensorView, dim: int, factor: int, inner_split: bool = True) -> None:
        self._int("split", "dim", dim)
        self._int("split", "factor", factor)
        self._tv("split", arg).split(dim, factor, bool(inner_split))
        self._record("split", arg, dim, factor, inner_split=inner_split)

    def merge(self, arg: TensorView, dim: int) -> None:
        self._tv("merge", arg).merge(self._int("merge", "dim", dim))
        self._record("merge", arg, dim)

    def reorder(self, arg: TensorView, old2new: dict[int, int]) -> None:
        if not isinstance(old2new, dict):
            raise ScheduleError(f"sched.reorder: old2new must be a dict {{old: new}}, got {old2new!r}")
        for k, v in old2new.items():
            self._int("reorder", "old2new keys and values", k)
            self._int("reorder", "old2new keys and values", v)
        self._tv("reorder", arg).reorder(old2new)
        self._record("reorder", arg, dict(old2new))

    def parallelize(self, tensor: TensorView, axis: int, parallel_type: ParallelType) -> None:
        if not isinstance(parallel_type, ParallelType):
            raise ScheduleError(f"sched.parallelize: expected a ParallelType, got {parallel_type!r}")
        self._tv("parallelize", tensor).parallelize(self._int("parallelize", "axis", axis), parallel_type)
        self._record("parallelize", tensor, axis, parallel_type)

    def set_memory_type(self, tensor: TensorView, memory_type: MemoryType) -> None:
        if not isinstance(memory_type, MemoryType):
            raise ScheduleError(f"sched.set_memory_type: expected a MemoryType, got {memory_type!r}")
        self._tv("set_memory_type", tensor).set_memory_type(memory_type)
        self._record("set_memory_type", tensor, memory_type)

    def set_allocation_as_loop(self, arg: TensorView) -> None:
        self._tv("set_allocation_as_loop", arg).set_allocation_as_loop()
        self._record("set_allocation_as_loop", arg)

    # ---- caches and rfactor --------------------------------------------------------------
    def cache_after(
        self,
        tensor: TensorView,
        op_type: LoadStoreOpType = LoadStoreOpType.Set,
        cache_op: CacheOp = CacheOp.Unspecified,
    ) -> TensorView:
        if not isinstance(op_type, LoadStoreOpType) or not isinstance(cache_op, CacheOp):
            raise ScheduleError(
                f"sched.cache_after: expected a LoadStoreOpType and a CacheOp, got {op_type!r}, {cache_op!r}"
            )
        out = self._tv("cache_after", tensor).cache_after(cache_op=cache_op.value, op_type=op_type.value)
        kwargs: dict[str, Any] = {}
        if op_type != LoadStoreOpType.Set:
            kwargs["op_type"] = op_type
        if cache_op != CacheOp.Unspecified:
            kwargs["cache_op"] = cache_op
        self._record("cache_after", tensor, **kwargs)
        return out

    def cache_before(self, tensor: TensorView, op_type: LoadStoreOpType = LoadStoreOpType.Set) -> TensorView:
        if not isinstance(op_type, LoadStoreOpType):
            raise ScheduleError(f"sched.cache_before: expected a LoadStoreOpType, got {op_type!r}")
        out = self._tv("cache_before", tensor).cache_before(op_type=op_type.value)
        kwargs = {} if op_type == LoadStoreOpType.Set else {"op_type": op_type}
        self._record("cache_before", tensor, **kwargs)
        return out

    def cache_fork(self, tensor: TensorView) -> TensorView:
        out = self._tv("cache_fork", tensor).cache_fork()
        self._record("cache_fork", tensor)
        return out

    def rfactor(self, arg: TensorView, dims: Sequence[int]) -> TensorView:
        return self._rfactor("rfactor", arg, dims)

    def reduction_factor(self, arg: TensorView, dims: Sequence[int]) -> TensorView:
        return self._rfactor("reduction_factor", arg, dims)

    def _rfactor(self, name: str, arg: TensorView, dims: Sequence[int]) -> TensorView:
        if isinstance(dims, (int, str)) or not isinstance(dims, Iterable):
            raise ScheduleError(f"sched.{name}: dims must be a list of ints, got {dims!r}")
        ds = [self._int(name, "dims", d) for d in dims]
        out = self._tv(name, arg).rfactor(ds)
        self._record(name, arg, list(dims))
        return out

    # ---- propagation and inlining ------------------------------------------------------------
    def transform_like(self, tensor: TensorView, selected_tensors: Sequence[TensorView] = ()) -> None:
        ref = self._tv("transform_like", tensor)
        _transform_like(ref, self._tvs("transform_like", selected_tensors))
        self._record("transform_like", tensor, *([list(selected_tensors)] if selected_tensors else []))

    def parallelize_like(
        self,
        tensor: TensorView,
        pos: int = -1,
        selected_tensors: Sequence[TensorView] = (),
        selected_parallel_types: Iterable[ParallelType] = (),
        propagate_padding: bool = True,
    ) -> None:
        ref = self._tv("parallelize_like", tensor)
        self._int("parallelize_like", "pos", pos)
        types = list(selected_parallel_types)
        _parallelize_like(ref, pos, self._tvs("parallelize_like", selected_tensors), types or None)
        kwargs: dict[str, Any] = {}
        if pos != -1:
            kwargs["pos"] = pos
        if selected_tensors:
            kwargs["selected_tensors"] = list(selected_tensors)
        if types:
            kwargs["selected_parallel_types"] = types
        if not propagate_padding:
            # Padding propagation only matters for vectorized resize; recorded for round trips.
            kwargs["propagate_padding"] = propagate_padding
        self._record("parallelize_like", tensor, **kwargs)

    def inline_most(self, selected_tensors: Sequence[TensorView] = ()) -> None:
        _inline_most(self._fd.fusion, self._tvs("inline_most", selected_tensors))
        self._record("inline_most", *([list(selected_tensors)] if selected_tensors else []))

    def inline_at(
        self,
        tensor: TensorView,
        pos: int = -1,
        best_effort: bool = False,
        selected_tensors: Sequence[TensorView] = (),
    ) -> None:
        ref = self._tv("inline_at", tensor)
        self._int("inline_at", "pos", pos)
        _inline_all_at(ref, pos, bool(best_effort), self._tvs("inline_at", selected_tensors))
        kwargs: dict[str, Any] = {}
        if pos != -1:
            kwargs["pos"] = pos
        if best_effort:
            kwargs["best_effort"] = best_effort
        if selected_tensors:
            kwargs["selected_tensors"] = list(selected_tensors)
        self._record("inline_at", tensor, **kwargs)

    # ---- inspection ---------------------------------------------------------------
    def tensors(self) -> list[TensorView]:
        return [t for t in self._fd.fusion.tensors() if isinstance(t, TensorView)]

    def to_string(self, tensor: TensorView) -> str:
        return transforms_block(self._tv("to_string", tensor))

    def user_schedule_ir(self) -> str:
        return str(self._fd.fusion)

    def is_reduction(self, tensor: TensorView) -> bool:
        tv = self._tv("is_reduction", tensor)
        return tv not in tv.fusion.inputs and any(i.is_reduction for i in tv.domain.logical)
