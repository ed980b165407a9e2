"""A tensor's alignment with the resize scheduler's reference, carried across one
producer-consumer edge.

An Alignment gives, per reference axis, the tensor's node for it (a logical id, or
across a reshape a split part or merge of them, see engine.schedule.resize_axes) and
the chain of Resizes between that node and the reference. Crossing a pad or slice
towards its input adds the op's Resize to the chain (c2p), crossing it the other way
removes it (p2c); an edge that would need another chain than the tensor has raises
ConflictError, which engine.schedule.resize_exclusive resolves by recomputing.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain, Resize
from engine.ir.logical_map import pairwise_logical_map
from engine.ir.tensorview import TensorView
from engine.schedule.resize_axes import (
    Entry,
    ReshapeAxisError,
    down_through_view,
    map_leaves,
    same_chain,
    same_entry,
    up_through_view,
    without_broadcast_merges,
)

# Per reference axis: the tensor's node for it (a logical id, or across a reshape a split
# part or merge of them) and the Resizes between them (see engine.schedule.resize_axes).
Alignment = dict[int, Entry]


class ConflictError(ScheduleError):
    """`tensor` is needed by `consumer` under another alignment than it has (both None
    when the cause is not one tensor, e.g. a reshape)."""

    def __init__(self, message: str, tensor: TensorView | None = None,
                 consumer: TensorView | None = None, output: TensorView | None = None) -> None:
        super().__init__(message)
        self.tensor = tensor
        self.consumer = consumer
        self.output = output  # an output its producers would give a resized loop


NOT_RECOMPUTED = ("; recomputing a resize input is supported for pointwise, cast, broadcast, "
                   "expand, squeeze, set, permute, reshape, slice, pad, cat and factory ops only")


def _logical_to_root(tv: TensorView, i: IterDomain) -> tuple[IterDomain, Resize | None]:
    """The root id a logical id comes from, and the Resize between them (None if none)."""
    if tv.domain.root is None or i in tv.domain.root:
        return i, None
    d = i.definition
    if isinstance(d, Resize) and d.in_id in tv.domain.root:
        return d.in_id, d
    raise ConflictError(f"{tv.short_name}: {i} is made by a reshape")


def _root_to_logical(tv: TensorView, r: IterDomain) -> tuple[IterDomain, Resize | None]:
    logical = tv.domain.logical
    if r in logical:
        return r, None
    for u in r.uses:
        if isinstance(u, Resize) and u.out in logical:
            return u.out, u
    raise ConflictError(f"{tv.short_name}: {r} goes through a reshape")


class PairwiseMaps:
    """The pairwise maps of one fusion while no domain and no op changes, each computed
    once: alignment walks every edge from both ends, and some twice.

    An edge's map depends on the consumer's definition (its op, and where the producer
    sits among its tensor operands) and the two tensors' domains. make_resizes_exclusive
    keeps one PairwiseMaps over its attempts: its edits add tensors and swap an op's
    operand for a copy, which leaves the remaining edges' ops, operand positions and
    domains as they were; the definition is part of the key all the same."""

    def __init__(self) -> None:
        self._forward: dict[tuple[TensorView, TensorView, ex.Expr | None], dict[IterDomain, IterDomain]] = {}
        self._inverse: dict[tuple[TensorView, TensorView, ex.Expr | None], dict[IterDomain, IterDomain]] = {}

    def forward(self, producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
        """Producer logical id -> consumer root id (callers only read it)."""
        key = (producer, consumer, consumer.definition)
        m = self._forward.get(key)
        if m is None:
            m = self._forward[key] = pairwise_logical_map(producer, consumer)
        return m

    def inverse(self, producer: TensorView, consumer: TensorView) -> dict[IterDomain, IterDomain]:
        """Consumer root id -> producer logical id."""
        key = (producer, consumer, consumer.definition)
        m = self._inverse.get(key)
        if m is None:
            m = self._inverse[key] = {c: p for p, c in self.forward(producer, consumer).items()}
        return m


def _map_alignment(al: Alignment, leaf: Callable[[IterDomain, tuple[Resize, ...]], Entry | None]) -> Alignment:
    out: Alignment = {}
    try:
        for k, e in al.items():
            got = map_leaves(e, leaf)
            if got is not None:
                out[k] = got
    except ReshapeAxisError as err:
        raise ConflictError(str(err)) from None
    return out


def c2p(consumer: TensorView, producer: TensorView, al: Alignment, maps: PairwiseMaps) -> Alignment:
    inv = maps.inverse(producer, consumer)
    view = isinstance(consumer.definition, ex.ViewOp)

    def leaf(i: IterDomain, chain: tuple[Resize, ...]) -> Entry | None:
        if view:
            # Across a reshape: the reshape's splits and merges of the producer's ids.
            return map_leaves((up_through_view(consumer, i), chain),
                              lambda r, c: None if inv.get(r) is None else (inv[r], c))
        r, rz = _logical_to_root(consumer, i)
        p = inv.get(r)
        if p is None:
            return None
        return p, ((rz,) if rz is not None else ()) + chain

    return _map_alignment(al, leaf)


def p2c(producer: TensorView, consumer: TensorView, al: Alignment, maps: PairwiseMaps) -> Alignment:
    fwd = maps.forward(producer, consumer)
    view = isinstance(consumer.definition, ex.ViewOp)

    def leaf(i: IterDomain, chain: tuple[Resize, ...]) -> Entry | None:
        r = fwd.get(i)
        if r is None:
            return None
        if view:
            # Across a reshape: the consumer's loop undoes the reshape's splits and merges.
            return down_through_view(consumer, r), chain
        c, rz = _root_to_logical(consumer, r)
        if rz is not None:
            if not chain or not same_chain(chain[:1], (rz,)):
                raise ConflictError(
                    f"{producer.short_name} is needed under different resizes (its use by "
                    f"{consumer.short_name} is not on the reference's path)" + NOT_RECOMPUTED,
                    producer, consumer)
            chain = chain[1:]
        return c, chain

    return _map_alignment(al, leaf)


def same_alignment(a: Alignment, b: Alignment) -> bool:
    """Agreement on the axes both know. One side may lack axes: a producer of a
    broadcast does not have the new broadcast axis its consumer aligns."""
    return all(same_entry(a[k], b[k]) or same_entry(without_broadcast_merges(a[k]), without_broadcast_merges(b[k]))
               for k in a.keys() & b.keys())
