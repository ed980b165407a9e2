"""Transactions of the scheduling primitives: validate by trying, restore on refusal.

A primitive runs its mutation inside `transaction`, which verifies the tensors it touched
and their producers and consumers (engine.ir.verify) and puts them back as they were when
the mutation or the verifier raises ScheduleError. `loop_edits_trusted` and
`verification_deferred` batch that verification for the engine's own schedulers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.iterdomain import IterDomain, transforms_between
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.loop_map import loop_maps_frozen
from engine.ir.verify import only_positions_change, verify

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


def _domain_ids(tv: TensorView) -> list[IterDomain]:

    dom = tv.domain
    ends = [*dom.loop, *dom.maybe_allocation, *dom.logical]
    ids: dict[IterDomain, None] = dict.fromkeys([*dom.maybe_root, *ends])
    for t in transforms_between(dom.maybe_root, ends):
        ids.update(dict.fromkeys([*t.inputs, *t.outputs]))
    return list(ids)


class _Snapshot:
    """What a primitive may change on one tensor, to put back when it is refused."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv
        self.domain = tv.domain
        dom = tv.domain
        self.loop = list(dom.loop)
        self.allocation = None if dom.allocation is None else list(dom.allocation)
        self.contiguity = list(dom.contiguity)
        self.loop_only = list(dom.loop_only)
        self.ca = tv.compute_at_pos
        self.mpp = tv.max_producer_pos
        self.memory_type = tv.memory_type
        ids = _domain_ids(tv)
        self.parallel = {i: i.parallel_type for i in ids}
        # Transforms link themselves into their inputs' `uses`; a refused primitive's
        # transforms are unlinked again so that forward walks never see them.
        self.nuses = {i: len(i.uses) for i in ids}

    def restore(self) -> None:
        tv = self.tv
        tv.domain = self.domain
        tv.domain.loop = self.loop
        tv.domain.allocation = self.allocation
        tv.domain.contiguity = self.contiguity
        tv.domain.loop_only = self.loop_only
        tv.compute_at_pos = self.ca
        tv.max_producer_pos = self.mpp
        tv.memory_type = self.memory_type
        for i, p in self.parallel.items():
            i.parallel_type = p
        for i, n in self.nuses.items():
            del i.uses[n:]


class _PositionSnapshot:
    """What inlining may change on one tensor (its compute-at and produce positions), to
    put back when it is refused."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv
        self.ca = tv.compute_at_pos
        self.mpp = tv.max_producer_pos

    def restore(self) -> None:
        self.tv.compute_at_pos = self.ca
        self.tv.max_producer_pos = self.mpp


class _State(threading.local):
    """Per thread (a compile in a worker thread schedules its own fusion), each None outside
    its context:
    - unverified: tensors whose loop-domain edits wait for one verification (see
      loop_edits_trusted);
    - deferred: tensors whose verification waits for the end of a trial (see
      verification_deferred)."""

    unverified: dict[TensorView, None] | None = None
    deferred: dict[TensorView, None] | None = None


_state = _State()


@contextlib.contextmanager
def loop_edits_trusted() -> Iterator[None]:
    """Verify the loop-domain edits (split, merge, reorder, parallelize) made inside once, at
    the end, instead of after each edit with a snapshot to roll back to.

    For the engine's own schedulers, which make hundreds of such edits per fusion and never
    recover from a refused one: a user's schedule keeps the per-edit check, whose rollback
    leaves the session usable after a refused edit. Other primitives (cache, rfactor,
    compute_at) are verified as they happen even inside. Holds in the calling thread only.
    """
    if _state.unverified is not None:
        yield
        return
    unverified: dict[TensorView, None] = {}
    _state.unverified = unverified
    try:
        yield
        touched = list(unverified)
    finally:
        _state.unverified = None
    verify_around(touched)


@contextlib.contextmanager
def verification_deferred() -> Iterator[None]:
    """Inside, transactions neither verify nor keep anything to roll back to: the tensors
    each one would verify (its own and their producers and consumers) are verified once,
    at the end, which raises what that verification raises.

    For a trial schedule on a copy that is thrown away if anything fails: a caller that
    needs the error of a failed trial repeats it on a new copy with every step verified
    (reshape_schedule_reason). The schedules tried this way edit loop domains, parallel
    types and positions, which no later step undoes: the state that the verification at
    the end sees is one that every step's verification would have passed through. Holds
    in the calling thread only."""
    if _state.deferred is not None:
        yield
        return
    deferred: dict[TensorView, None] = {}
    _state.deferred = deferred
    try:
        yield
        pending = list(deferred)
    finally:
        _state.deferred = None
    _verify_all(pending)


def transactions_roll_back() -> bool:
    """Whether a refused transaction puts its tensors back (not inside verification_deferred)."""
    return _state.deferred is None


@contextlib.contextmanager
def transaction(tvs: Sequence[TensorView], loop_edit: bool = False,
                inlining: bool = False, verified_inside: bool = False) -> Iterator[None]:
    """Run a mutation of `tvs`, then verify them and their neighbours; on ScheduleError
    (from the mutation or the verifier) put every tensor back and re-raise. `inlining`:
    the mutation only sets compute-at positions, so only those are kept to put back, and
    legal positions are computed once (see only_positions_change). `verified_inside`: the
    mutation ends with a transaction of its own over the same tensors, whose verification
    of the final state is this one's (verify is a pure check): only the rollback is kept."""
    deferred = _state.deferred
    if deferred is not None:
        with only_positions_change() if inlining else contextlib.nullcontext():
            yield
        for t in tvs:
            deferred[t] = None
            deferred.update(dict.fromkeys(producers_of(t)))
            deferred.update(dict.fromkeys(consumers_of(t)))
        return
    unverified = _state.unverified
    if loop_edit and unverified is not None:
        yield
        unverified.update(dict.fromkeys(tvs))
        return
    snaps: list[_Snapshot] | list[_PositionSnapshot]
    if inlining:
        snaps, scope = [_PositionSnapshot(t) for t in tvs], only_positions_change()
    else:
        snaps, scope = [_Snapshot(t) for t in tvs], contextlib.nullcontext()
    # Inside loop_edits_trusted: the tensors whose edits still wait for the check at its
    # end, as they are now, to put back if this transaction is undone (see below).
    waiting = dict(unverified) if unverified is not None else None
    with scope:
        try:
            yield
            if verified_inside:
                return
            check: dict[TensorView, None] = {}
            for t in tvs:
                check[t] = None
                check.update(dict.fromkeys(producers_of(t)))
                check.update(dict.fromkeys(consumers_of(t)))
            _verify_all(check)
            unverified = _state.unverified
            if unverified is not None:
                # Verified as they are now, loop edits included: the check at the end of
                # loop_edits_trusted would repeat it unless an edit comes after (which
                # lists the tensor again). Most schedules end with inline_most, whose
                # transaction verifies every tensor.
                for t in check:
                    unverified.pop(t, None)
        except ScheduleError:
            for s in reversed(snaps):
                s.restore()
            unverified = _state.unverified
            if waiting is not None and unverified is not None:
                # Undone: what a nested transaction verified is no longer the state.
                unverified.update(waiting)
            raise


def verify_around(tvs: Sequence[TensorView]) -> None:
    # Each tensor once, in first-seen order: verify is a pure check, so the first
    # failure (the error raised) is the one checking every occurrence would find.
    check: dict[TensorView, None] = {}
    for t in tvs:
        check.update(dict.fromkeys([t, *producers_of(t), *consumers_of(t)]))
    _verify_all(check)


def _verify_all(tvs: Iterable[TensorView]) -> None:
    """verify each of `tvs`; nothing changes meanwhile, so loop maps (every consumer's,
    for each tensor's inline position) are computed once per pair."""
    with loop_maps_frozen():
        for t in tvs:
            verify(t)
