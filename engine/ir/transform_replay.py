"""Transform histories between domains and their replay onto another tensor.

Replay is nvFuser's TransformReplay reduced to what this engine needs: the splits
and merges that take a reference tensor from its logical domain to its loop domain
are applied, in the same order, to the IterDomains of a target tensor that the
logical map pairs with the reference's. Resize and Swizzle in a loop history are
not replayed (their outputs stay unmapped).

Broadcast forwarding: when a merge has one input on one side only (a broadcast axis
that the other tensor does not have, e.g. across a broadcast or squeeze op), the
merged axis continues the axis that is present. This is how nvFuser lets a
non-broadcast producer be inlined into a consumer whose loop merged in a broadcast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine.ir.exprs import ViewOp
from engine.ir.iterdomain import IdTransform, IterDomain, Merge, Resize, Split, transforms_between
from engine.ir.logical_map import IdMap, consumers_of, logical_map, pairwise_logical_map

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


def loop_transforms(tv: TensorView) -> list[IdTransform]:
    return transforms_between(tv.domain.logical, tv.domain.loop)


def replay_onto(
    ref_transforms: Sequence[IdTransform],
    ref_loop: Sequence[IterDomain],
    id_map: IdMap,
    target_ids: Sequence[IterDomain],
    on_transform: Callable[[IdTransform], None] | None = None,
) -> tuple[list[IterDomain], IdMap]:
    """Apply `ref_transforms` to `target_ids` through `id_map` (ref id -> target id).

    Returns the target's new loop domain and the extended map. The new loop lists the
    targets of the reference's loop ids in the reference's order, then the target ids
    the reference does not reach, in their own order (at the end, so that they do not
    stop inlining of the mapped axes in front of them).
    """
    rmap: IdMap = dict(id_map)
    current = list(target_ids)
    for t in ref_transforms:
        if isinstance(t, Resize):
            # Only met when replaying from a consumer's root (slice, pad): the resized
            # axis continues its input's axis on the target.
            if t.in_id in rmap:
                rmap[t.out] = rmap[t.in_id]
        elif isinstance(t, Split):
            src = rmap.get(t.in_id)
            if src is None or src not in current:
                continue
            s = Split(src, t.factor, t.inner_split)
            k = current.index(src)
            current[k : k + 1] = [s.outer, s.inner]
            rmap[t.outer], rmap[t.inner] = s.outer, s.inner
            if on_transform is not None:
                on_transform(s)
        elif isinstance(t, Merge):
            o, i = rmap.get(t.outer), rmap.get(t.inner)
            o = o if o in current else None
            i = i if i in current else None
            mixes = o is not None and i is not None and (
                o.is_reduction != i.is_reduction and not (o.is_broadcast or i.is_broadcast))
            if mixes:
                kept = beside_reduced_broadcast(o, i)
                if kept is not None:
                    # One side is a reduced broadcast here (a reduction over a size-1
                    # axis, seed 001's AllocationDomainBroadcast variant): it holds one
                    # index, so the merged axis continues the other side, as across a
                    # squeeze, and the reduced broadcast stays a separate axis.
                    rmap[t.out] = kept
                    continue
                # The reference merged two axes that are iteration and reduction here
                # (across a reduction op): not a valid merge, so it is not replayed and
                # both axes stay as they are.
                continue
            if o is not None and i is not None and o is not i:
                m = Merge(o, i)
                k = min(current.index(o), current.index(i))
                current = [d for d in current if d is not o and d is not i]
                current.insert(k, m.out)
                rmap[t.out] = m.out
                if on_transform is not None:
                    on_transform(m)
            elif o is not None or i is not None:
                # One side is missing on the target: the merged axis continues it.
                rmap[t.out] = o if o is not None else i  # type: ignore[assignment]
    used: set[IterDomain] = set()
    loop: list[IterDomain] = []
    for r in ref_loop:
        d = rmap.get(r)
        if d is not None and d in current and d not in used:
            used.add(d)
            loop.append(d)
    loop += [d for d in current if d not in used]
    return loop, rmap


def _reduced_broadcast(i: IterDomain) -> bool:
    """A reduction over one element (of a broadcast axis): its index is always 0."""
    return (i.is_reduction and i.expanded_extent is None and i.extent.is_const
            and i.extent.value == 1)


def beside_reduced_broadcast(a: IterDomain, b: IterDomain) -> IterDomain | None:
    """Of two ids a reference merged, where one is a reduced broadcast and the other is
    not a reduction: the other one (the merge continues it), else None."""
    if _reduced_broadcast(a) and not b.is_reduction:
        return b
    if _reduced_broadcast(b) and not a.is_reduction:
        return a
    return None


# ---- the linear equivalence across a reshape -------------------------------------------

def linear_ids(tv: TensorView) -> list[IterDomain]:
    """The logical ids that make up `tv`'s elements in row-major order: reduction ids
    and plain (unexpanded) broadcasts, which hold one element, are left out."""
    return [i for i in tv.domain.logical
            if not i.is_reduction and not (i.is_broadcast and i.expanded_extent is None)]


def linear_id(tv: TensorView) -> IterDomain | None:
    """The first id of `tv`'s logical->loop history that is the row-major merge of all of
    its `linear_ids` (the only such logical id when there is one), or None.

    A reshape keeps the row-major order of the elements: element k of its input,
    flattened, is element k of its output, flattened. So the full merge of a reshape
    input's logical ids and the full merge of its output's iterate the same loop, which
    is how a schedule that merges everything (the pointwise 1-D schedule, nvFuser's
    reshape-compatible flattening) crosses a reshape in either direction.
    """
    want = linear_ids(tv)
    if not want:
        return None
    logical = set(tv.domain.logical)
    memo: dict[IterDomain, list[IterDomain] | None] = {}

    def lin(i: IterDomain) -> list[IterDomain] | None:
        if i in memo:
            return memo[i]
        got: list[IterDomain] | None
        if i in logical:
            got = [i] if i in want else []
        elif isinstance(i.definition, Merge):
            a, b = lin(i.definition.outer), lin(i.definition.inner)
            got = None if a is None or b is None else a + b
        else:
            got = None
        memo[i] = got
        return got

    candidates = [i for i in tv.domain.logical if i in want]
    for t in loop_transforms(tv):
        if isinstance(t, Merge):
            candidates.append(t.out)
    return next((i for i in candidates if lin(i) == want), None)


def is_reshape_edge(producer: TensorView, consumer: TensorView) -> bool:
    e = consumer.definition
    return isinstance(e, ViewOp) and bool(e.inputs) and e.inputs[0] is producer


def replay_edge(src: TensorView, dst: TensorView) -> None:
    """Give `dst` (a direct producer or consumer of `src`) `src`'s loop transforms."""

    if (is_reshape_edge(src, dst) or is_reshape_edge(dst, src)) and _replay_across_reshape(src, dst):
        return
    if dst in consumers_of(src):
        id_map = logical_map(src, dst)
        ts = loop_transforms(src)
    else:
        # From a consumer, start at its root so its root->logical splits (rfactor,
        # reshape) are replayed on the producer too.
        id_map = {c: p for p, c in pairwise_logical_map(dst, src).items()}
        ts = transforms_between(src.domain.maybe_root, src.domain.loop)
    loop, _ = replay_onto(ts, src.domain.loop, id_map, dst.domain.logical,
                          on_transform=dst._follow_allocation)
    dst.domain.loop = loop


def _replay_across_reshape(src: TensorView, dst: TensorView) -> bool:
    """Across a reshape (`dst` is the reshape of `src`, or its input). Where `src`'s loop
    descends from the full merge of its logical ids (engine.ir.transform_replay.linear_id),
    `dst` merges all of its own logical ids the same way, which iterates the same
    elements in the same order (a reshape keeps the row-major order), and replays what
    `src` did after its full merge. Every tensor of a flattened (1-D) schedule thus gets
    the same loop whichever path propagation takes to it; otherwise a tensor reached
    forward through a reshape would keep its reshaped axes unscheduled (the logical map
    pairs only the axes a reshape keeps), and one reached backward would carry the
    reshape's splits and merges, which a neighbour reached along another path (a reshape
    and its inverse between one input and an output) does not share.

    Returns False, changing nothing, when `src` has no full merge (a tiled or partly
    merged schedule): the caller then replays what the logical map pairs (backward, the
    reshape output's root->logical transforms are replayed onto the input)."""

    x = linear_id(src)
    ids = linear_ids(dst)
    if x is None or not ids:
        return False
    y = ids[0]
    for i in ids[1:]:
        m = Merge(y, i)
        dst._follow_allocation(m)
        y = m.out
    rest = [i for i in dst.domain.logical if i not in ids]
    ts = transforms_between([x], src.domain.loop)
    loop, _ = replay_onto(ts, src.domain.loop, {x: y}, [y, *rest],
                          on_transform=dst._follow_allocation)
    dst.domain.loop = loop
    return True
