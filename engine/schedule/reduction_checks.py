"""Compile-time checks shared by the reduction scheduler and the persistent schedulers,
each of which asks them in nvFuser's order: the first checks of every reduction-based
scheduler (`common_reject`), reductions of different patterns (`unmapped_reductions`),
gather-like ops that a reduction reads, a reduction's result broadcast and resolved again, a reduction
over an expanded broadcast axis, and axes that a schedule propagated from the reductions
would leave without threads (`uncovered_reason`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.coverage import uncovered_axis
from engine.analysis.persistent import pattern_order, reduction_pattern, reduction_tvs
from engine.ir import exprs as ex
from engine.ir import quant_exprs
from engine.ir.dependencies import downstream_tvs
from engine.ir.logical_map import consumers_of, pairwise_logical_map
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.base import SchedulerType

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo


def has_sub_byte(fusion: Fusion) -> bool:
    return any(t.dtype.bits % 8 for t in fusion.tensors())  # type: ignore[attr-defined]


def unsupported_ops(fusion: Fusion) -> str | None:
    """Ops no reduction-based scheduler handles (nvFuser routes them elsewhere)."""
    for e in fusion.exprs():
        if isinstance(e, (ex.MatmulOp, ex.LinearOp)):
            return "no support for mma ops."
        if isinstance(e, ex.SliceOp) and e.inputs[0] in fusion.inputs:
            continue  # a window of an input: its reads start at an offset
        if isinstance(e, (ex.SliceOp, ex.PadOp, ex.CatOp)):
            return "no support for resize ops"
        if type(e).__module__ == quant_exprs.__name__:
            return f"no support for {e.op_name}"
    return None


def post_reduction_broadcast(fusion: Fusion, reds: list[TensorView]) -> bool:
    """A reduction's result broadcast again and resolved (nvFuser's hasPostReductionBCast):
    on a path from a reduction, a consumer maps a broadcast axis of its producer to a
    concrete one (a normalization, not a plain reduction). A broadcast left unresolved
    (rsqrt(mean + eps) kept [rows, 1] as an output) is a plain reduction's epilogue."""
    seen: set[TensorView] = set()
    for r in reds:
        for p in [r, *downstream_tvs(r)]:
            if p in seen:
                continue
            seen.add(p)
            if not any(i.is_broadcast for i in p.domain.logical):
                continue  # nothing of p's for a consumer to resolve
            for c in consumers_of(p):
                if any(a.is_broadcast and not b.is_broadcast
                       for a, b in pairwise_logical_map(p, c, map_broadcast=True).items()):
                    return True
    return False


def uncovered_reason(fusion: Fusion, refs: list[TensorView]) -> str | None:
    """Why a schedule propagated from `refs` would leave an axis of the fusion without
    threads (engine.analysis.coverage): every thread would run it whole, from a local
    buffer as long as the axis."""

    found = uncovered_axis(fusion, refs)
    if found is None:
        return None
    tv, axis = found
    return (f"{tv.short_name} axis {axis} maps to no axis of the reference "
            f"{', '.join(r.short_name for r in refs)}: each thread would run it whole "
            "(unsupported post reduction normalization)")


def common_reject(fusion: Fusion, kind: SchedulerType) -> str | None:
    """The first checks of every reduction-based scheduler, in nvFuser's order."""
    if has_sub_byte(fusion):
        return "Does not support sub-byte data types."
    reds = reduction_tvs(fusion)
    if not reds:
        return "No reduction op to schedule" if kind == SchedulerType.reduction else "needs a reduction op"
    if not any(isinstance(v, TensorView) for v in fusion.inputs):
        return "Scheduling not supported with no input"
    why = tools.memory_promotion_reason(fusion)
    if why is not None:
        return why
    return unsupported_ops(fusion)


def unmapped_reductions(reds: list[TensorView]) -> tuple[TensorView, TensorView] | None:
    for a, b in zip(reds, reds[1:]):
        if reduction_pattern(a) != reduction_pattern(b):
            return a, b
    return None


def unequal_reductions(reds: list[TensorView], info: SchedulerRuntimeInfo) -> str | None:
    """Reductions of one pattern whose axes differ in size at these inputs (a Qwen3 q norm
    over 32 heads beside its k norm over 8): one schedule cannot cover both, as nvFuser's
    un-mapped multi-reduction check refuses reductions whose axes do not map."""
    for a, b in zip(reds, reds[1:]):
        ea = [info.extent(i) for i in pattern_order(a)]
        eb = [info.extent(i) for i in pattern_order(b)]
        if ea != eb:
            return f"Un-mapped multi-reduction: {a.short_name} {ea} and {b.short_name} {eb}"
    return None


def reduces_expansion(red: TensorView) -> bool:
    """Whether `red` reduces an expanded broadcast axis of its input."""
    d = red.definition
    src = d.inputs[0] if d is not None else None
    if not isinstance(src, TensorView):
        return False
    ids = [i for i in src.domain.logical if not i.is_reduction]
    return any(i.has_expanded_extent for i, o in zip(ids, red.domain.logical) if o.is_reduction)
