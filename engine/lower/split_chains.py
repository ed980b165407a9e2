"""Split chains: the splits an IterDomain was made by, from the id it was split from.

Two ids iterate the same elements when they were split alike from ids of equal extents
(`same_split_source`); the lowering's indexing (engine.lower.index) and its loop nests ask
this for every producer id it seeds from a consumer's. The chains are fixed while lowering,
so each is kept in the kernel's Extents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from engine.ir.iterdomain import IterDomain, Split

if TYPE_CHECKING:
    from engine.lower.index import Extents

SplitStep = tuple[int, bool, bool]


def split_chain(i: IterDomain, ext: Extents,
                continues: Mapping[IterDomain, IterDomain] | None = None) -> tuple[IterDomain, list[SplitStep]]:
    """The id `i` was split from, through any number of splits (and on through `continues`:
    ids that continue another, as a reduction's root ids continue its rfactor producer's),
    and the splits on the way from `i` up: (factor, whether `i`'s side is the outer one,
    inner split). Two ids iterate the same elements when both agree: equal extents of the
    split inputs alone can be a coincidence (x[62] split by 2, then by 128, and [2 ex, 31]
    merged, then split by 128, both split 62 elements).

    Callers only compare the steps: without `continues` (or with none to follow), the
    chain of an id is kept in `ext` (the schedule is final while lowering, and each id
    is compared with many others)."""
    if not continues:
        got = ext.chains.get(i)
        if got is None:
            got = ext.chains[i] = _split_chain(i, ext, None)
        return got
    return _split_chain(i, ext, continues)


def _split_chain(i: IterDomain, ext: Extents,
                 continues: Mapping[IterDomain, IterDomain] | None) -> tuple[IterDomain, list[SplitStep]]:
    seen: set[IterDomain] = set()
    steps: list[SplitStep] = []
    while i not in seen:
        seen.add(i)
        while isinstance(i.definition, Split):
            t = i.definition
            steps.append((ext.value(t.factor), i is t.outer, t.inner_split))
            i = t.in_id
        if continues is None or i not in continues:
            break
        i = continues[i]
    return i, steps


def same_split_source(a: IterDomain, b: IterDomain, ext: Extents,
                      continues: Mapping[IterDomain, IterDomain] | None = None) -> bool:
    """Whether `a` and `b` are split alike from ids of equal extents. A reshape's output
    is scheduled from its logical ids, which its reshape split from its root: its consumer's
    ids agree with it up to those logical ids (the chains stopped at the reshape's splits),
    its producer's, replayed across the reshape, up to the root."""
    ra, sa = split_chain(a, ext, continues)
    rb, sb = split_chain(b, ext, continues)
    if sa == sb and ext.of(ra) == ext.of(rb):
        return True
    if not ext.views or continues:
        return False
    ra, sa = _view_chain(a, ext)
    rb, sb = _view_chain(b, ext)
    return sa == sb and ext.of(ra) == ext.of(rb)


def _view_chain(i: IterDomain, ext: Extents) -> tuple[IterDomain, list[SplitStep]]:
    """split_chain stopped at a reshape's split."""
    got = ext.view_chains.get(i)
    if got is None:
        steps: list[SplitStep] = []
        j = i
        while isinstance(j.definition, Split) and j.definition not in ext.views:
            t = j.definition
            steps.append((ext.value(t.factor), j is t.outer, t.inner_split))
            j = t.in_id
        got = ext.view_chains[i] = (j, steps)
    return got


def same_source(pid: IterDomain, cid: IterDomain, ext: Extents) -> bool:
    """Whether a producer id and the consumer id the loop map pairs it with split the same
    elements in the same way (so equal indices mean the same element), or are not split."""
    if pid.is_broadcast or not isinstance(pid.definition, Split):
        return True
    # Every index of a producer asks again; the split chains are fixed while lowering.
    got = ext.same_source.get((pid, cid))
    if got is None:
        got = ext.same_source[(pid, cid)] = same_split_source(pid, cid, ext)
    return got
