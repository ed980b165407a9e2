"""The schedulers in priority order; which accept a fusion, and why the others refuse.

Scheduler modules register themselves with `register`; `can_schedule` asks each in
nvFuser's priority order and records every verdict in the trace.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from engine.ir.logical_map import frozen_fact, pairwise_maps_frozen
from engine.schedule import tools
from engine.schedule.base import PRIORITY, Scheduler, SchedulerType, Verdict

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace

_SCHEDULERS: dict[SchedulerType, Scheduler] = {}


class Unknown(enum.Enum):
    """A compile-time reason not computed yet (None means "no reason": accepted)."""

    UNKNOWN = "unknown"


UNKNOWN = Unknown.UNKNOWN

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


def note_no_self_mapping(fusion: Fusion) -> None:
    """Record that `fusion` has no self mapping, known without the check: the segmenter
    knows it for a part, without reshapes, of a fusion that has none (see
    tools.exact_self_mapping_reason)."""
    fusion._self_mapping = (fusion.version, None)  # type: ignore[attr-defined]


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
        importlib.import_module(f"engine.schedule.{name}")


def register(cls: type[Scheduler]) -> type[Scheduler]:
    _SCHEDULERS[cls.type] = cls()
    return cls


def get(kind: SchedulerType | str) -> Scheduler:
    _load()
    return _SCHEDULERS[SchedulerType(kind) if isinstance(kind, str) else kind]


def compile_time_reason(kind: SchedulerType, fusion: Fusion) -> str | None:
    """Why `kind` refuses `fusion` whatever the sizes (the part of its verdict that depends
    on the fusion alone), or None."""
    _load()
    # Rules that hold for every scheduler come first, as in nvFuser's checkCanSchedule:
    # the layout op's runtime function needs its offsets and output in global memory,
    # which no scheduler (not even expr_eval, which cannot run it) can change.
    # These rules read the fusion alone: each is found once per verdict on it (see
    # frozen_fact), not once per scheduler asked.
    reason = frozen_fact(fusion, "layout_op_buffer", tools.layout_op_buffer_reason)
    if reason is None and kind in _KERNEL_SCHEDULERS:
        reason = frozen_fact(fusion, "aten_only", tools.aten_only_reason) or _self_mapping(fusion)
    if reason is None:
        reason = _SCHEDULERS[kind].reject_compile_time(fusion)
    return reason


def verdict(kind: SchedulerType, fusion: Fusion, info: SchedulerRuntimeInfo | None,
            compile_reason: str | None | Unknown = UNKNOWN) -> Verdict:
    """`kind`'s verdict on `fusion`; `compile_reason`, when known, is compile_time_reason's
    answer for this fusion (or one built the same way), which is then not asked again."""
    reason = compile_time_reason(kind, fusion) if compile_reason is UNKNOWN else compile_reason
    if reason is None and info is not None:
        reason = _SCHEDULERS[kind].reject_runtime(fusion, info)
    return Verdict(kind, reason is None, reason or "")


def can_schedule(
    fusion: Fusion, info: SchedulerRuntimeInfo | None = None, trace: Trace | None = None,
    subject: str = "fusion", known: Mapping[SchedulerType, str | None] | None = None,
) -> tuple[list[Verdict], SchedulerType | None]:
    """Every scheduler's verdict, and the first in priority order that accepts. `known`:
    compile-time reasons already found for this fusion's structure (the segmenter's, for
    the segment it cut the same way); the runtime checks are always made."""
    known = known or {}
    with pairwise_maps_frozen(fusion):
        verdicts = [verdict(t, fusion, info, known.get(t, UNKNOWN)) for t in PRIORITY]
    if trace is not None:
        for v in verdicts:
            trace.event("can_schedule", subject, str(v), scheduler=str(v.scheduler),
                        accepted=v.accepted, reason=v.reason)
    first = next((v.scheduler for v in verdicts if v.accepted), None)
    return verdicts, first
