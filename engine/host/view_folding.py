"""Chains of host view steps folded into one `as_strided` per tensor a later step needs.

A run plan's host steps that only view their inputs (reshape, slice, squeeze, permute, ...)
learn their geometry on the first run (engine.host.alias_replay). A chain of them starting at
a fusion input (a QKV split: reshape, permute, slice, squeeze) is then known end to end: every
tensor of the chain is the input at some sizes, strides and offset, since `as_strided` takes
strides over the whole storage. Such a chain is replaced by one step that makes, from the
input, only the tensors a kernel, another step or the fusion's outputs read; the intermediate
views are never made. The input's sizes and strides are those the plan was compiled for (its
input check), so the geometry holds on every run; its storage offset is read each time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine.host.alias_replay import EMPTY

# (slot written, root slot, sizes, strides, storage offset from the root's)
_Direct = tuple[int, int, tuple[int, ...], tuple[int, ...], int]


class DirectViews:
    """A folded chain's step: the tensors it must make, each one `as_strided` of its root."""

    def __init__(self, views: list[_Direct]) -> None:
        self.views = views

    def __call__(self, slots: list[Any], env: Any) -> None:
        for out, root, size, stride, offset in self.views:
            x = slots[root]
            slots[out] = x.as_strided(size, stride, x.storage_offset() + offset)


def fold_view_chains(steps: Sequence[Any], roots: set[int], output_slots: set[int],
                     slots_read: Callable[[Any], list[int]],
                     slot_of: Callable[[Any], int | None]) -> list[Any] | None:
    """`steps` with their learnt view steps that hang off `roots` (fusion input slots)
    replaced, position for position, by DirectViews making only what the remaining steps and
    `output_slots` read (nothing, for a step whose outputs only other folded steps read);
    None when no step folds. A view step is one whose `replay` was learnt and rebuilds every
    output as a view of one of its `refs` (`slot_of` gives a reference's slot, or None)."""
    geometry: dict[int, tuple[int, tuple[int, ...], tuple[int, ...], int]] = {}
    folded: set[int] = set()
    for k, st in enumerate(steps):
        replay = getattr(st, "replay", None)
        if replay is None or any(view[0] == EMPTY for view in replay.views):
            continue
        sources = [slot_of(st.refs[src]) for src, *_ in replay.views]
        if any(s is None or (s not in roots and s not in geometry) for s in sources):
            continue
        for out, s, (_src, size, stride, offset) in zip(st.outs, sources, replay.views):
            root, base = (s, 0) if s in roots else (geometry[s][0], geometry[s][3])
            geometry[out] = (root, size, stride, base + offset)
        folded.add(k)
    if not folded:
        return None
    needed = set(output_slots)
    for k, st in enumerate(steps):
        if k not in folded:
            needed.update(slots_read(st))
    return [DirectViews([(o, *geometry[o]) for o in st.outs if o in needed]) if k in folded else st
            for k, st in enumerate(steps)]
