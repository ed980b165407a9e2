"""The resize scheduler's axes: what plays each reference axis in a tensor, across reshapes.

The resize scheduler aligns every tensor with its reference axis by axis (see
engine.schedule.resize_walk): per reference axis, an Entry names the tensor's id for it and
the chain of Resizes (the slices and pads between the tensor and the reference) that
its loop applies to that id. Without reshapes that id is one of the tensor's logical ids.

A reshape splits and merges axes, so across one a reference axis is played by a part of
a logical id or by several of them merged. Entries then hold a Derived node: the outer
or inner part of a split of another entry, or the merge of two entries, built over the
tensor's logical ids. This is nvFuser's loop-domain propagation through a reshape
(scheduleLoopDomainsLike) in this engine's terms:

- from a reshape's output to its input (towards producers) the reshape's own
  root->logical splits and merges are replayed on the input's logical ids;
- from a reshape's input to its output (towards consumers) the output's loop undoes
  them: a root id that the reshape split is the merge of the two parts, one it merged
  is the matching part of an inner split of the merge by the inner id's extent.

Both forms iterate the same elements in the same order as the reshape's ids they stand
for, and engine.ir.loop_map.loop_map pairs them, so the tensors on either side of a
reshape are inlined like any others. `build` turns an Entry into loop transforms of one
tensor; entries are plain data until then, so that checking a fusion changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.errors import ScheduleError
from engine.ir.iterdomain import IterDomain, Merge, Resize, Split, transforms_between
from engine.ir.scalar import Scalar, same_scalar
from engine.ir.tensorview import TensorView


@dataclass(frozen=True, eq=False)
class Derived:
    """An axis made from other entries: kind "outer" or "inner" (that part of a split of
    parts[0] by `factor`), or "merge" (parts[0] merged with parts[1])."""

    kind: str
    parts: tuple[Entry, ...]
    factor: Scalar | None = None
    inner_split: bool = True


Node = IterDomain | Derived
# A node and the Resizes that the tensor's loop applies on top of it, innermost first.
Entry = tuple[Node, tuple[Resize, ...]]


class ReshapeAxisError(ScheduleError):
    """A reshape whose axes this propagation cannot express (a transform other than a
    split or a merge between its root and logical domains)."""


def same_chain(a: tuple[Resize, ...], b: tuple[Resize, ...]) -> bool:
    if not a and not b:  # most axes carry no resize
        return True
    return len(a) == len(b) and all(
        same_scalar(x.left, y.left) and same_scalar(x.right, y.right) for x, y in zip(a, b)
    )


def same_entry(a: Entry, b: Entry) -> bool:
    """Whether two entries make the same loop axis (structurally; Derived nodes are made
    afresh by every walk step that crosses a reshape)."""
    (x, ca), (y, cb) = a, b
    if not same_chain(ca, cb):
        return False
    if isinstance(x, IterDomain) or isinstance(y, IterDomain):
        return x is y
    if x.kind != y.kind or x.inner_split != y.inner_split or len(x.parts) != len(y.parts):
        return False
    if (x.factor is None) != (y.factor is None):
        return False
    if x.factor is not None and y.factor is not None and not same_scalar(x.factor, y.factor):
        return False
    return all(same_entry(p, q) for p, q in zip(x.parts, y.parts))


def _is_broadcast_leaf(e: Entry) -> bool:
    return isinstance(e[0], IterDomain) and e[0].is_broadcast and not e[1]


def without_broadcast_merges(e: Entry) -> Entry:
    """`e` with every merge of a (resize-free) broadcast leaf replaced by its other part:
    the axis a tensor without that broadcast plays for the same reference axis."""
    node, chain = e
    if not isinstance(node, Derived):
        return e
    parts = tuple(without_broadcast_merges(p) for p in node.parts)
    if node.kind == "merge":
        kept = [q for p, q in zip(node.parts, parts) if not _is_broadcast_leaf(p)]
        if len(kept) == 1:
            return kept[0][0], kept[0][1] + chain
    return Derived(node.kind, parts, node.factor, node.inner_split), chain


def has_resize(e: Entry) -> bool:
    node, chain = e
    return bool(chain) or (isinstance(node, Derived) and any(has_resize(p) for p in node.parts))


def leaf_of(e: Entry) -> IterDomain | None:
    """The logical id of an entry that is one, else None."""
    return e[0] if isinstance(e[0], IterDomain) else None


def map_leaves(e: Entry, f: Callable[[IterDomain, tuple[Resize, ...]], Entry | None]) -> Entry | None:
    """`e` with every leaf (a logical id and its chain) replaced by f's entry; None when f
    gives None for one of them (the axis does not continue across the edge)."""
    node, chain = e
    if isinstance(node, IterDomain):
        return f(node, chain)
    parts: list[Entry | None] = [map_leaves(p, f) for p in node.parts]
    if node.kind == "merge" and not chain and sum(q is None for q in parts) == 1:
        # Broadcast forwarding (as the transform replay's): a merge with a broadcast that
        # does not continue across the edge continues its other part.
        gone = node.parts[parts.index(None)]
        if _is_broadcast_leaf(gone):
            return next(q for q in parts if q is not None)
    if any(q is None for q in parts):
        return None
    return derive(node.kind, tuple(q for q in parts if q is not None), chain, node.factor,
                  node.inner_split)


def _extent(e: Entry) -> Scalar | None:
    """The extent of an entry, where it is known without building it."""
    node, chain = e
    if chain:
        return None
    if isinstance(node, IterDomain):
        return node.extent
    if (node.kind == "inner") == node.inner_split:
        return node.factor  # the part whose extent the split fixed
    return None


def derive(kind: str, parts: tuple[Entry, ...], chain: tuple[Resize, ...] = (),
           factor: Scalar | None = None, inner_split: bool = True) -> Entry:
    """The entry of a Derived node, with a split of a merge and a merge of a split
    cancelled: walking a reshape and then back across it gives the ids it started from."""
    if kind == "merge":
        (o, oc), (i, ic) = parts
        if (not oc and not ic and isinstance(o, Derived) and isinstance(i, Derived)
                and o.kind == "outer" and i.kind == "inner" and o.inner_split == i.inner_split
                and o.factor is not None and i.factor is not None and same_scalar(o.factor, i.factor)
                and same_entry(o.parts[0], i.parts[0])):
            src, src_chain = o.parts[0]
            return src, src_chain + chain
        return Derived(kind, parts, None, True), chain
    (src, src_chain), = parts
    if isinstance(src, Derived) and src.kind == "merge" and not src_chain:
        fixed = _extent(src.parts[1] if inner_split else src.parts[0])
        if factor is not None and fixed is not None and same_scalar(factor, fixed):
            node, own = src.parts[0] if kind == "outer" else src.parts[1]
            return node, own + chain
    return Derived(kind, parts, factor, inner_split), chain


def _view_transforms(tv: TensorView) -> list:
    return transforms_between(tv.domain.maybe_root, tv.domain.logical)


def up_through_view(consumer: TensorView, i: IterDomain) -> Node:
    """A reshape output's logical id as a node over its root ids (the reshape's own
    splits and merges, replayed from the root)."""
    root = set(consumer.domain.maybe_root)

    def up(x: IterDomain) -> Node:
        if x in root:
            return x
        d = x.definition
        if isinstance(d, Split):
            return Derived("outer" if x is d.outer else "inner", ((up(d.in_id), ()),),
                           d.factor, d.inner_split)
        if isinstance(d, Merge):
            return Derived("merge", ((up(d.outer), ()), (up(d.inner), ())))
        raise ReshapeAxisError(f"{consumer.short_name}: {x} is not made by a split or merge of the reshape")

    return up(i)


def down_through_view(consumer: TensorView, r: IterDomain) -> Node:
    """A reshape output's root id as a node over its logical ids (the reshape undone)."""
    logical = set(consumer.domain.logical)
    own = {id(t) for t in _view_transforms(consumer)}

    def down(x: IterDomain) -> Node:
        if x in logical:
            return x
        for u in x.uses:
            if id(u) not in own:
                continue
            if isinstance(u, Split):
                return Derived("merge", ((down(u.outer), ()), (down(u.inner), ())))
            if isinstance(u, Merge):
                return Derived("outer" if x is u.outer else "inner", ((down(u.out), ()),),
                               u.inner.extent, True)
        raise ReshapeAxisError(f"{consumer.short_name}: {x} is not split or merged by the reshape")

    return down(r)


class LoopBuilder:
    """Turns entries into one tensor's loop ids. Entries are compared structurally, so
    an entry met again (the source of both parts of a split) is built once, and a split
    is made once for both of its parts."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv
        self.built: list[tuple[Entry, IterDomain]] = []

    def build(self, e: Entry) -> IterDomain:
        for f, i in self.built:
            if same_entry(e, f):
                return i
        node, chain = e
        cur = node if isinstance(node, IterDomain) else self._derived(node)
        loop = self.tv.domain.loop
        for rz in chain:
            # A loop-only Resize with the downstream op's offsets (not an rfactor id).
            new = Resize(cur, rz.left, rz.right, is_rfactor=False).out
            loop[loop.index(cur)] = new
            cur = new
        self.built.append((e, cur))
        return cur

    def _derived(self, d: Derived) -> IterDomain:
        tv = self.tv
        if d.kind == "merge":
            o, i = self.build(d.parts[0]), self.build(d.parts[1])
            tv.merge(tv.domain.loop.index(o), tv.domain.loop.index(i))
            m = o.uses[-1]
            assert isinstance(m, Merge)
            return m.out
        src = self.build(d.parts[0])
        assert d.factor is not None
        factor = d.factor
        s = next((t for t in src.uses if isinstance(t, Split) and same_scalar(t.factor, factor)
                  and t.inner_split == d.inner_split and (t.outer in tv.domain.loop
                                                          or t.inner in tv.domain.loop)), None)
        if s is None:
            tv.split(tv.domain.loop.index(src), factor, d.inner_split)
            s = src.uses[-1]
            assert isinstance(s, Split)
        return s.outer if d.kind == "outer" else s.inner


def derives_from_inner(i: IterDomain, src: IterDomain, through_merges: bool = False) -> bool:
    """Whether loop id `i` walks `src` (a logical id) innermost and contiguously: `src`
    itself, a Resize of it, or the inner part of a split of it. With `through_merges`, also
    a merge whose inner part does: a run inside `src` as long as the caller knows `src`'s
    extent holds whole runs (a reshape's [H * D] read from [H, S, D] by vectors within D)."""
    while i is not src:
        d = i.definition
        if isinstance(d, Resize):
            i = d.in_id
        elif isinstance(d, Split) and i is d.inner:
            i = d.in_id
        elif isinstance(d, Merge) and through_merges:
            i = d.inner
        else:
            return False
    return True


__all__ = ["Derived", "Entry", "LoopBuilder", "Node", "ReshapeAxisError", "derives_from_inner",
           "down_through_view", "has_resize", "leaf_of", "map_leaves", "same_chain", "same_entry", "up_through_view",
           "without_broadcast_merges"]
