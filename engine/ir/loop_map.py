"""Loop maps: which loop of a producer iterates the same elements as a consumer's.

The pairwise map (producer logical -> consumer root) is followed through the transforms that
match on both sides (same kind, factor and mapped inputs) down to the loop domains, across a
reshape from one side's full merge to the other's (engine.ir.transform_replay.linear_id), across
Resizes of equal offsets, and from a block quantization's input blocks to its scales. Inlining,
the lowering's loop nests and its indexing ask for them; `loop_maps_frozen` keeps them while a
fusion's schedule does not change.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from engine.ir.iterdomain import IdTransform, IterDomain, Merge, Resize, Split, transforms_between
from engine.ir.logical_map import IdMap, pairwise_logical_map
from engine.ir.quant_exprs import BlockQuantizationOp
from engine.ir.scalar import same_scalar
from engine.ir.transform_replay import beside_reduced_broadcast, is_reshape_edge, linear_id, loop_transforms

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


def _reshape_linear_map(producer: TensorView, consumer: TensorView) -> IdMap:
    """Across a reshape: the producer's full merge -> the consumer's (see linear_id)."""
    if not is_reshape_edge(producer, consumer):
        return {}
    x, y = linear_id(producer), linear_id(consumer)
    return {x: y} if x is not None and y is not None else {}


def _same_split(a: Split, b: Split) -> bool:
    return a.inner_split == b.inner_split and same_scalar(a.factor, b.factor)


def _block_scale_map(producer: TensorView, consumer: TensorView,
                     p_ts: list[IdTransform]) -> IdMap:
    """A block quantization's input split into blocks -> its block scales' block axis.

    The scales' last axis counts blocks (K / B) and maps to no axis of the input
    logically (K is not K / B). But where the input's loop domain splits K by B (an
    inner split), the outer part walks the blocks exactly as the scales' last axis
    does: scale j belongs to elements j*B .. j*B+B-1. Mapping them lets the quantized
    input be inlined into the quantization (its consumers include the scales) and
    the scales be computed in the loops of the block they belong to.
    """
    e = consumer.definition
    if not (isinstance(e, BlockQuantizationOp) and consumer is e.block_scales
            and e.inputs and producer is e.inputs[0]):
        return {}
    p_ids = [i for i in producer.domain.logical if not i.is_reduction]
    c_ids = [i for i in consumer.domain.maybe_root if not i.is_reduction]
    if not p_ids or not c_ids:
        return {}
    k = p_ids[-1]
    for t in p_ts:
        if (isinstance(t, Split) and t.in_id is k and t.inner_split and t.factor.is_const
                and t.factor.value == e.block_size):
            return {t.outer: c_ids[-1]}
    return {}


def loop_map(producer: TensorView, consumer: TensorView) -> IdMap:
    """Producer ids -> consumer ids that iterate the same loop, logical domain to loop domain.

    Starts from the pairwise map (producer logical -> consumer root) and follows
    transforms that match on both sides (same kind, factor and mapped inputs), the
    consumer's root->logical ones included, so a producer split like an rfactor or
    reshape split maps. A Resize matches a consumer Resize of the mapped id with the
    same left and right offsets: that is how a producer whose loop domain carries the
    resize of a pad or slice downstream (the resize scheduler's propagation) iterates
    the same loop as the pad's or slice's output; a producer without it is not
    inlined across the slice or pad. Merges with a broadcast axis that only one side
    has forward the other axis.

    Across a reshape, a producer whose loop was replayed from the reshape's output
    (backward propagation) matches the output's reshape transforms one by one; one
    scheduled before the reshape (forward propagation) instead shares the full merge of
    its logical ids with the output's full merge (linear_id). Both are tried and the map
    that pairs more of the producer's loop ids with the consumer's wins.
    """
    frozen = _state.frozen
    if frozen is not None:
        # The key holds everything the map is computed from: the loop domains themselves
        # (their ids fix the transforms that lead to them), the producer's logical and the
        # consumer's root domain, and the op between them with its operands. A changed
        # loop or a rewired op misses.
        d = consumer.definition
        key = (producer, consumer, tuple(producer.domain.loop), tuple(consumer.domain.loop),
               tuple(producer.domain.logical), tuple(consumer.domain.maybe_root), d,
               tuple(d.inputs) if d is not None else ())
        hit = frozen.get(key)
        if hit is None:
            hit = frozen[key] = _fresh_loop_map(producer, consumer)
        return dict(hit)
    return _fresh_loop_map(producer, consumer)


class _State(threading.local):
    """Per thread (a compile in a worker thread keeps its own): the maps while
    loop_maps_frozen holds, else None."""

    frozen: dict[tuple[object, ...], dict[IterDomain, IterDomain]] | None = None


_state = _State()


@contextlib.contextmanager
def loop_maps_frozen() -> Iterator[None]:
    """Reuse loop_map results (lowering asks for the same pairs hundreds of times: every
    index walks its producers' maps; scheduling verifies every tensor's inline position
    against its consumers after each step). Results are keyed by what they depend on
    (see loop_map), so a schedule may go on changing meanwhile."""
    outer = _state.frozen
    _state.frozen = {} if outer is None else outer
    try:
        yield
    finally:
        _state.frozen = outer


def loop_map_across_resize(producer: TensorView, consumer: TensorView) -> IdMap:
    """loop_map, where a consumer's Resize that the producer's loop lacks (a slice or pad
    the producer was not scheduled through) maps the producer's id to the resized one, as
    nvFuser's PERMISSIVE_RESIZE map does: the two loops then share their splits and
    merges, though not their extents. For copying parallel types, never for inlining."""
    return _fresh_loop_map(producer, consumer, across_resize=True)


def _fresh_loop_map(producer: TensorView, consumer: TensorView, across_resize: bool = False) -> IdMap:
    m = _loop_map(producer, consumer, {}, across_resize)
    linear = _reshape_linear_map(producer, consumer)
    if linear:
        alt = _loop_map(producer, consumer, linear, across_resize)
        c_loop = set(consumer.domain.loop)

        def reach(mm: IdMap) -> int:
            return sum(1 for i in producer.domain.loop if mm.get(i) in c_loop)

        if reach(alt) > reach(m):
            m = alt
    _map_loop_only(producer, consumer, m)
    return m


def _map_loop_only(producer: TensorView, consumer: TensorView, m: IdMap) -> None:
    """Pair each loop-only broadcast of the producer (TensorView.broadcast_loop) with the
    consumer's loop id at the same position, when that is a broadcast nothing else maps to.
    A loop-only id comes from no logical id, so no transform can map it: it stands for
    whatever loop its position holds, which is the loop it was inserted to match."""
    loop_only = producer.domain.loop_only
    if not loop_only:
        return
    c_loop = consumer.domain.loop
    image = set(m.values())
    for k, i in enumerate(producer.domain.loop):
        if k < len(c_loop) and i in loop_only:
            c = c_loop[k]
            if c.is_broadcast and c not in image:
                m[i] = c
                image.add(c)


def _loop_map(producer: TensorView, consumer: TensorView, linear: IdMap, across_resize: bool = False) -> IdMap:
    m: IdMap = pairwise_logical_map(producer, consumer)
    p_ts = loop_transforms(producer)
    m.update(_block_scale_map(producer, consumer, p_ts))
    # The producer's merges that build its full merge are not matched against the
    # consumer's reshape merges: the full merge maps to the consumer's full merge.
    m.update(linear)
    c_ts = transforms_between(consumer.domain.maybe_root, consumer.domain.loop)
    c_set = {id(t) for t in c_ts}
    # The producer's transforms not settled yet, in order (those that make part of the
    # full merge are); `done` holds the settled ones of both sides.
    pending = p_ts
    done: set[int] = set()
    if linear:
        done = {id(t) for t in p_ts if any(o in linear for o in t.outputs)}
        pending = [t for t in p_ts if id(t) not in done]
    changed = True
    while changed:
        changed = False
        unsettled = []
        for t in pending:
            if id(t) in done:
                continue
            if _match(t, m, c_set):
                done.add(id(t))
                changed = True
            else:
                unsettled.append(t)
        pending = unsettled
        if _undo_reshape(m, c_ts, done):
            changed = True
        # Consumer-side forwarding: the consumer merged one of our ids with a broadcast
        # axis that the producer does not have.
        image = {v: k for k, v in m.items()}
        if across_resize and _forward_resizes(m, image, c_ts, done):
            changed = True
        for u in c_ts:
            if id(u) in done or not isinstance(u, Merge):
                continue
            uo, ui = u.inputs
            xo, xi = image.get(uo), image.get(ui)
            if (xo is None) != (xi is None):
                missing = uo if xo is None else ui
                if missing.is_broadcast:
                    p = xo if xo is not None else xi
                    assert p is not None
                    out = u.outputs[0]
                    if m.get(p) is not out:
                        m[p] = out
                        image[out] = p
                        changed = True
                    done.add(id(u))
    return m


def _forward_resizes(m: IdMap, image: dict[IterDomain, IterDomain], c_ts: list[IdTransform],
                     done: set[int]) -> bool:
    """loop_map_across_resize's forwarding: a consumer Resize of an id that a producer id maps
    to, whose output nothing maps to yet (the producer has no matching Resize), takes that
    producer id along; whether any did. Updates `m` and `image` (m inverted)."""
    found = False
    for u in c_ts:
        if id(u) in done or not isinstance(u, Resize):
            continue
        p = image.get(u.in_id)
        if p is not None and u.out not in image:
            m[p] = u.out
            del image[u.in_id]
            image[u.out] = p
            done.add(id(u))
            found = True
    return found


def _undo_reshape(m: IdMap, c_ts: list[IdTransform], done: set[int]) -> bool:
    """Consumer loop transforms that undo the consumer's own reshape (the resize
    scheduler's alignment across a reshape, engine.schedule.resize_axes): a merge of the
    two parts of a split iterates the split id, and the parts of an inner split of a
    merge by the merge's inner extent iterate the merged ids. The producer ids mapped to
    what the reshape transformed map to them; whether any was mapped."""
    image = {id(v): k for k, v in m.items()}
    c_set = {id(t) for t in c_ts}
    found = False
    for u in c_ts:
        if id(u) in done:
            continue
        if isinstance(u, Merge):
            s = u.outer.definition
            if (isinstance(s, Split) and id(s) in c_set and s.outer is u.outer and s.inner is u.inner
                    and id(s.in_id) in image):
                m[image[id(s.in_id)]] = u.out
                done.add(id(u))
                found = True
        elif isinstance(u, Split) and u.inner_split:
            g = u.in_id.definition
            if (isinstance(g, Merge) and id(g) in c_set and same_scalar(u.factor, g.inner.extent)
                    and id(g.outer) in image and id(g.inner) in image):
                m[image[id(g.outer)]], m[image[id(g.inner)]] = u.outer, u.inner
                done.add(id(u))
                found = True
    return found


def _match(t: IdTransform, m: IdMap, c_set: set[int]) -> bool:
    """Map the outputs of the producer's transform `t` to those of the consumer's matching
    transform (among `c_set`), when its inputs are mapped and one matches; whether it did.
    Unmatched transforms are retried after consumer-side forwarding remaps an input."""
    if isinstance(t, Split):
        b = m.get(t.inputs[0])
        if b is None:
            return False
        for u in b.uses:
            if id(u) in c_set and isinstance(u, Split) and _same_split(t, u):
                m[t.outputs[0]], m[t.outputs[1]] = u.outputs
                return True
        return False
    if isinstance(t, Resize):
        b = m.get(t.inputs[0])
        if b is None:
            return False
        for u in b.uses:
            if (id(u) in c_set and isinstance(u, Resize) and same_scalar(u.left, t.left)
                    and same_scalar(u.right, t.right)):
                m[t.outputs[0]] = u.outputs[0]
                return True
        return False
    if isinstance(t, Merge):
        to, ti = t.inputs
        bo, bi = m.get(to), m.get(ti)
        if bo is not None and bi is not None:
            for u in bo.uses:
                if id(u) in c_set and isinstance(u, Merge) and u.inputs[0] is bo and u.inputs[1] is bi:
                    m[t.outputs[0]] = u.outputs[0]
                    return True
            kept = beside_reduced_broadcast(bo, bi)
            if kept is not None and (to.is_broadcast or ti.is_broadcast):
                # Our merge of a broadcast with an axis that the consumer reduces over one
                # element and keeps (see replay_onto): the merged axis iterates the kept one.
                m[t.outputs[0]] = kept
                return True
            return False
        if (bo is None) != (bi is None):
            missing = to if bo is None else ti
            if missing.is_broadcast:
                m[t.outputs[0]] = bo if bo is not None else bi  # type: ignore[assignment]
                return True
    return False
