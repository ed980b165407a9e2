"""The persistent schedulers' checks: nvFuser's compile-time checks in its order
(`persistent_compile_reject`), with the shapes of reductions that the combined inner-outer
schedule can compute (`inner_outer_shape_reason`, `outer_result_reused`), and whether the
persistent buffers fit on chip at all (`fits`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import (
    downstream_tvs,
    is_fastest_dim_reduction,
    is_reduction_tv,
    persistent_buffers,
    reduction_tvs,
    reduction_type,
)
from engine.analysis.view_interference import interfering_view
from engine.ir.logical_map import logical_map, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule.base import SchedulerType
from engine.schedule.persistent_budget import register_budget, smem_budget
from engine.schedule.reduction_checks import (
    common_reject,
    reduces_expansion,
    uncovered_reason,
    unmapped_reductions,
)

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.runtime.device import DeviceProperties


_EXPECTED = {
    SchedulerType.inner_persistent: "inner",
    SchedulerType.outer_persistent: "outer",
    SchedulerType.inner_outer_persistent: "inner_outer",
}


def persistent_compile_reject(fusion: Fusion, kind: SchedulerType) -> str | None:
    """nvFuser's compile-time checks of the persistent schedulers, in its order."""
    why = common_reject(fusion, kind)
    if why is not None:
        return why
    reds = reduction_tvs(fusion)
    if reduction_type(reds) != _EXPECTED[kind]:
        return "ReductionType and heuristic doesn't match."
    if kind != SchedulerType.inner_outer_persistent:
        pair = unmapped_reductions(reds)
        if pair is not None:
            return f"unmapped reduction {pair[0]} and {pair[1]}"
    else:
        why = inner_outer_shape_reason(reds) or outer_result_reused(fusion, reds)
        if why is not None:
            return why
    view = interfering_view(fusion, _reference(reds, kind))
    if view is not None:
        return f"View may interfere with normalization scheduling ({view.output.short_name})."
    expanding = next((r for r in reds if reduces_expansion(r)), None)
    if expanding is not None:
        # This engine's limit: a persistent buffer holds that axis as a real one, which the
        # reduction's loop cannot index for it (each thread would read others' elements).
        return f"{expanding.short_name} reduces an expanded broadcast axis"
    if not persistent_buffers(fusion).persistent_buffers:
        return "no persistent buffer identified"
    return uncovered_reason(fusion, [_reference(reds, kind)])


def _reference(reds: list[TensorView], kind: SchedulerType) -> TensorView:
    """The reduction the schedule splits and propagates from."""
    if kind == SchedulerType.inner_outer_persistent:
        return next(r for r in reds if is_fastest_dim_reduction(r))
    return reds[0]


def inner_outer_shape_reason(reds: list[TensorView]) -> str | None:
    """nvFuser's checkIfReductionsAreInnerOuter: the combined schedule reads an inner
    reduction as [I, .., I, R, .., R] and an outer one as [R, .., R, I, .., I] (at least one
    of each kind, nothing else in between, a broadcast axis included): a reduction of a
    middle axis, or of an outer and the inner axis at once, is neither. Then, as its
    reduction root size and isReductionIterationAxisMatched checks: every reduction has as
    many axes, the inner ones reduce the same axes and the outer ones reduce exactly the
    inner ones' iteration axes (the rows the blocks share). An outer sum over part of the
    rows of an inner reduction's result (InstanceNorm's weight grads: sum over N of an
    [N, C] result of sums over H, W) is no such reduction: the combined kernel would need
    the rows of other blocks. Unlike nvFuser, an axis of extent 1 is left out (it iterates
    once whatever its kind): the RMSNorm backward of a [1, S, H] input, reducing its unit
    axis with the others, keeps its one combined kernel instead of five."""
    patterns: list[tuple[bool, list[str]]] = []
    for red in reds:
        kinds = ["R" if i.is_reduction else "I" if i.is_iteration else "-"
                 for i in red.domain.loop if not (i.extent.is_const and i.extent.value == 1)]
        inner = is_fastest_dim_reduction(red)
        first, second = ("I", "R") if inner else ("R", "I")
        k = 0
        while k < len(kinds) and kinds[k] == first:
            k += 1
        if k == 0 or k == len(kinds) or any(x != second for x in kinds[k:]):
            return ("to use combined reduction, inner reduction tensor should be [I,I,...,R,R] "
                    "and outer reduction tensor should be [R,R,...,I,I]")
        patterns.append((inner, kinds))
    ref = next((kinds for inner, kinds in patterns if inner), None)
    if ref is None:
        return None
    flipped = ["I" if x == "R" else "R" for x in ref]
    for inner, kinds in patterns:
        if len(kinds) != len(ref):
            return (f"inconsistent reduction root size: {len(kinds)} axes where the first inner "
                    f"reduction has {len(ref)}")
        if kinds != (ref if inner else flipped):
            return ("to use combined reduction, every iteration axis in inner reduction tv should "
                    "match to a reduction domain in outer reduction tv")
    return None


def outer_result_reused(fusion: Fusion, reds: list[TensorView]) -> str | None:
    """Why the combined inner-outer schedule cannot compute this fusion: an outer
    reduction's result is used again over the rows it reduced, or reduced again.

    That schedule ends each outer reduction with a grid reduction over the persistent
    blocks (gridReduce), after every block's loop over its rows: only the last block
    to arrive has the result, and no row is left to combine it with. A normalization
    over the outer axis (x - mean over dim 0, a two-pass variance over dim 0) needs it
    in every block, i.e. a grid-wide all-reduce and a second pass over the rows, which
    that schedule does not have. Whatever is computed from an outer result may only
    run over the result's own axes (and broadcasts of them that stay broadcast), to
    outputs: a tensor downstream of it with a concrete axis that does not come from the
    result's axes iterates over rows, and one defined by a reduction reduces it again.
    """
    order = {t: k for k, t in enumerate(fusion.tensors())}
    for red in reds:
        if is_fastest_dim_reduction(red):
            continue
        e = red.definition
        sibs = [o for o in e.outputs if isinstance(o, TensorView)] if e is not None else [red]
        own = {i for s in sibs for i in s.domain.logical if not i.is_reduction}
        down: set[TensorView] = set()
        for s in sibs:
            down |= downstream_tvs(s)
        down -= set(sibs)
        for t in sorted(down, key=lambda t: order.get(t, len(order))):
            if is_reduction_tv(t):
                return (f"outer reduction {red.short_name} is reduced again by {t.short_name}: the "
                        "combined kernel has an outer result only after its grid reduction")
            for p in producers_of(t):
                if p in down or p in sibs:
                    own |= {c for q, c in logical_map(p, t).items() if q in own}
            rows = [i for i in t.domain.logical
                    if not i.is_reduction and not i.is_broadcast and i not in own]
            if rows:
                return (f"outer reduction {red.short_name}'s result is used over the rows it reduced "
                        f"({t.short_name} axis {rows[0]}): the combined kernel's grid reduction gives "
                        "it to the last block only (a grid all-reduce is not supported)")
    return None


def fits(size: int, dev: DeviceProperties) -> str | None:
    if size > max(register_budget(dev), smem_budget(dev)):
        return "not enough registers or shared memory for persistence"
    return None
