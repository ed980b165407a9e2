"""Inlining every (selected) tensor of a fusion: at its largest legal position
(inline_most) or at a reference's position (inline_all_at), with persistent buffers
capped before the axes their reduction reduces (persistent_caps). Each runs as one
transaction: refused, nothing changes."""

from __future__ import annotations

from collections.abc import Sequence

from engine.analysis.persistent import persistent_buffers
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.dependencies import upstream_tvs
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import consumers_of, pairwise_logical_map, root_to_logical
from engine.ir.loop_map import loop_maps_frozen
from engine.ir.tensorview import TensorView, transaction
from engine.schedule.inline_broadcasts import inline_aligned, inline_targets


def inline_most(fusion: Fusion, selected: Sequence[TensorView] | None = None) -> None:
    """Inline every (selected) non-input tensor at its largest legal position.

    Where a consumer's loop domain has broadcast axes that a producer lacks (w[C] read
    as broadcast(w)[N, C] by x * broadcast(w), whose loop starts with the broadcast N),
    loops paired by position stop at the first of them and the producer would be
    computed outside the consumer's loops, by other threads. The producer gets loop-only
    broadcasts there first (TensorView.broadcast_loop; see inline_aligned), as nvFuser's
    inlining skips such axes and its loop promotion runs the producer in the consumer's
    loops."""
    targets = [t for t in (selected if selected is not None else fusion.tensors())
               if t not in fusion.inputs]
    caps = persistent_caps(fusion)
    if not inline_aligned(fusion, targets, caps):  # type: ignore[arg-type]
        inline_targets(fusion, targets, caps)  # type: ignore[arg-type]


def persistent_caps(fusion: Fusion) -> dict[TensorView, int]:
    """Inline positions of persistent buffers: a tensor a reduction reads and that is read
    again once the reduction is done (x in x - mean(x)) cannot share the loops over the axes
    the reduction reduces, which the reduction closes before its result exists (nvFuser's
    unmappable dims). Each is capped before its first loop axis derived from such an axis;
    without the cap inline_most makes the loop nests depend on each other in a cycle."""

    if not any(isinstance(e, ex.ReductionOp | ex.WelfordOp) for e in fusion.exprs()):
        return {}
    caps: dict[TensorView, int] = {}
    for red, live in persistent_buffers(fusion).live_across.items():
        cone = upstream_tvs(red) | {red}
        for t in live:
            reduced = _ids_reaching_reduction(t, red, cone)
            pos = next((k for k, i in enumerate(t.domain.loop) if _ancestors(i) & reduced), t.nloop)
            caps[t] = min(caps.get(t, t.nloop), pos)
    return caps


def _ids_reaching_reduction(t: TensorView, red: TensorView, cone: set[TensorView]) -> set[IterDomain]:
    """`t`'s logical ids that map to an axis `red` reduces, along consumers inside `cone`."""

    # origins[tv][i]: the ids of t that tv's id i comes from, over every path seen so far
    # (logical ids; the reduction's root ids, which an rfactor may have split).
    origins: dict[TensorView, dict[IterDomain, set[IterDomain]]] = {t: {i: {i} for i in t.domain.logical}}
    queue = [t]
    while queue:
        tv = queue.pop()
        for c in consumers_of(tv):
            if c not in cone:
                continue
            m = pairwise_logical_map(tv, c)
            if c is not red:
                r2l = root_to_logical(c)
                m = {p: r2l[q] for p, q in m.items() if q in r2l}
            got = origins.setdefault(c, {})
            grew = False
            for i, o in origins[tv].items():
                if i in m and not o <= got.get(m[i], set()):
                    got[m[i]] = got.get(m[i], set()) | o
                    grew = True
            if grew:
                queue.append(c)
    return {o for i, os in origins.get(red, {}).items() if i.is_reduction for o in os}


def _ancestors(i: IterDomain) -> set[IterDomain]:
    seen = {i}
    stack = [i]
    while stack:
        d = stack.pop().definition
        for x in (d.inputs if d is not None else []):
            if x not in seen:
                seen.add(x)
                stack.append(x)
    return seen


def inline_all_at(reference: TensorView, pos: int = -1, best_effort: bool = False,
                  selected: Sequence[TensorView] | None = None) -> None:
    """Inline the (selected) tensors at `reference`'s position `pos`.

    Positions are taken index for index: tensors scheduled with transform_like share
    the reference's loop order (mapped axes first), so position k means the same loops
    in each. A tensor with fewer loop axes, or whose legal position is lower, lowers
    the position with best_effort and is refused otherwise.
    """

    n = reference.nloop
    p = pos + n + 1 if pos < 0 else pos
    if not 0 <= p <= n:
        raise ScheduleError(f"{reference.short_name}: inline position {pos} is outside 0..{n}")
    fusion = reference.fusion
    targets = [t for t in (selected if selected is not None else fusion.tensors())
               if t not in fusion.inputs]
    with loop_maps_frozen(), transaction(fusion.tensors(), inlining=True):  # type: ignore[arg-type]
        for tv in targets:
            q = min(p, tv.nloop) if best_effort else p  # type: ignore[union-attr]
            tv.inline_at(q, best_effort)  # type: ignore[union-attr]
