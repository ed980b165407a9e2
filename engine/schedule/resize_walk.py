"""Every tensor's alignment with the resize scheduler's reference: a walk of the fusion.

nvFuser makes every tensor's loop domain exact-mapped with the reference by propagating
each slice's and pad's Resize onto the producers' loop domains
(propagateResizeToInputs), then schedules all loop domains like the reference. This
engine does the same in a simplified, explicit form:

1. A walk from the reference (and from the other outputs whose axes are exactly the
   reference's) over producer and consumer edges (breadth-first, as the propagation)
   records for every tensor, per axis of the reference, which of its logical ids plays
   that axis and the chain of Resize transforms that lie between that id and the
   reference (engine.schedule.resize_alignment).
2. Each tensor's loop domain is then that id with the chain's Resizes applied (same
   offsets, as new loop-only Resize transforms), in the reference's axis order, and
   the reference's splits and merges are applied the same way to every tensor
   (engine.schedule.resize_schedule). Producers of a pad thus iterate the padded
   extent (their values are read only inside the original range) and producers of a
   slice only the sliced range, so every tensor can be inlined into its consumers
   (engine.ir.loop_map.loop_map matches Resizes of equal offsets).

A tensor that two paths give different chains (a non-fusion-input tensor read by two
different slices, or by a slice and a pointwise op) is a conflict: the walk raises
ConflictError, and engine.schedule.resize_exclusive recomputes the tensor for one of
them (nvFuser's RecomputeTv) and resumes the walk. Fusion inputs are exempt: they are
read from global memory wherever their consumers need them, which is also why inputs
read by a slice or pad are not cached (as nvFuser's cacheInputs).
"""

from __future__ import annotations

from engine.ir.base import Val
from engine.ir.dependencies import upstream_tvs
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule.id_classes import exact_classes
from engine.schedule.resize_alignment import (
    NOT_RECOMPUTED,
    Alignment,
    ConflictError,
    PairwiseMaps,
    c2p,
    p2c,
    same_alignment,
)
from engine.schedule.resize_axes import Entry, has_resize, map_leaves


def align(fusion: Fusion, ref: TensorView,
          shared_inputs: set[TensorView] | None = None,
          maps: PairwiseMaps | None = None, through_inputs: bool = True) -> dict[TensorView, Alignment]:
    """Every tensor's alignment with `ref`; raises ConflictError when one is ambiguous.

    Fusion inputs that consumers need under different alignments are added to
    `shared_inputs`: a cache of such an input would be a conflicted tensor, so the
    scheduler reads them from global memory directly. `maps`: pairwise maps kept from
    an earlier alignment of the fusion (see PairwiseMaps for when they still hold).
    `through_inputs` False: the walk does not go from a fusion input to consumers it has
    not reached otherwise (the component of `ref`, see engine.schedule.resize_components).
    """
    walk = AlignWalk(fusion, ref, maps or PairwiseMaps(), shared_inputs is not None, through_inputs)
    try:
        return walk.run()
    finally:
        if shared_inputs is not None:
            shared_inputs |= walk.shared  # found before a conflict too, as they are found


# A walk's state before one of its steps (see AlignWalk.rewind): the tensor the step
# walks from, the phase, both queues' heads and lengths, how many tensors the result
# holds and how long the undo log is.
_Checkpoint = tuple[TensorView, int, int, int, int, int, int, int, int, int]


class AlignWalk:
    """align's walk, kept so that make_resizes_exclusive can resume it after an edit.

    The walk is deterministic: each step reads the neighbour lists of the tensor it walks
    from (its producers, or its consumers and producers) and the pairwise maps of those
    edges, and updates the result and the queues. After an edit of the fusion, a walk
    from scratch therefore repeats the old walk's steps exactly up to the first step from
    a tensor whose neighbour lists the edit changed; `rewind` restores the state before
    that step (every change is an append, or logged for undoing), so that `run` goes on
    as a walk from scratch would, and finds the same alignments and conflicts in the same
    order, without repeating the steps before it (every attempt at the same fusion)."""

    def __init__(self, fusion: Fusion, ref: TensorView, maps: PairwiseMaps, track_shared: bool,
                 through_inputs: bool = True) -> None:
        self.ref = ref
        self.maps = maps
        self.track_shared = track_shared
        self.through_inputs = through_inputs
        self.inputs = {id(v) for v in fusion.inputs}
        self.outputs = {id(v) for v in fusion.outputs if v is not ref}
        ref_ids = [i for i in ref.domain.logical if not i.is_reduction]
        self.result: dict[TensorView, Alignment] = {ref: {k: (i, ()) for k, i in enumerate(ref_ids)}}
        self.shared: set[TensorView] = set()
        # Queues are append-only lists with a head: their state is (head, length).
        self.phase = 1
        self.queue: list[TensorView] = [ref]
        if through_inputs:
            for out, al in _outputs_like(fusion, ref, ref_ids):
                self.result[out] = al
                self.queue.append(out)
        self.head = 0
        self.rest: list[TensorView] = []  # phase 2's tensors that are not inputs
        self.rest_head = 0
        self.later: list[TensorView] = []  # phase 2's inputs
        self.later_head = 0
        # Changes other than appends: axes added to a tensor's alignment, (t, k), and
        # inputs added to `shared`, (t, None).
        self.undo: list[tuple[TensorView, int | None]] = []
        self.steps: list[_Checkpoint] = []

    def _checkpoint(self, src: TensorView) -> None:
        self.steps.append((src, self.phase, self.head, len(self.queue), self.rest_head, len(self.rest),
                           self.later_head, len(self.later), len(self.result), len(self.undo)))

    def rewind(self, touched: tuple[set[TensorView], set[TensorView]]) -> None:
        """Restore the state before the first step that reads a neighbour list an edit
        changed (`touched`: the tensors whose producers, and those whose consumers, it
        changed; phase 1 reads producers only), or before the last step (the conflict's,
        which then comes again) when the edit changed none that the walk read."""
        producers, consumers = touched
        j = next((k for k, s in enumerate(self.steps)
                  if s[0] in producers or (s[1] == 2 and s[0] in consumers)), len(self.steps) - 1)
        (_, self.phase, self.head, n_queue, self.rest_head, n_rest, self.later_head, n_later,
         n_result, n_undo) = self.steps[j]
        del self.steps[j:], self.queue[n_queue:], self.rest[n_rest:], self.later[n_later:]
        while len(self.result) > n_result:
            self.result.popitem()  # the latest insertion: results are only ever appended
        while len(self.undo) > n_undo:
            t, k = self.undo.pop()
            if k is None:
                self.shared.discard(t)
            else:
                del self.result[t][k]

    def _share(self, nb: TensorView, src: TensorView) -> None:
        # The edge's alignment is found even for an input known to be shared: finding it
        # may raise a conflict (a reshape), as it always did.
        if (self.track_shared and not same_alignment(self.result[nb], c2p(src, nb, self.result[src], self.maps))
                and nb not in self.shared):
            self.shared.add(nb)
            self.undo.append((nb, None))

    def _extend(self, nb: TensorView, al: Alignment) -> None:
        have = self.result[nb]
        for k in al.keys() - have.keys():
            have[k] = al[k]
            self.undo.append((nb, k))

    def _check_output(self, tv: TensorView, al: Alignment, user: TensorView | None) -> None:
        # An output is written over its whole logical range: its loop cannot carry a
        # resize (nvFuser refuses a resize between the reference and an output). Needed
        # resized by a consumer: that consumer gets a copy; given a resize by its
        # producers: it gets private copies of them (make_resizes_exclusive).
        if id(tv) in self.outputs and any(has_resize(e) for e in al.values()):
            raise ConflictError(
                f"output {tv.short_name} would be written under a resize of the reference "
                f"{self.ref.short_name}" + NOT_RECOMPUTED, tv if user else None, user,
                None if user else tv)

    def run(self) -> dict[TensorView, Alignment]:
        if self.phase == 1:
            # First everything the reference depends on, from consumers to producers: a
            # tensor's alignment is what its consumers need (as the resize propagation goes
            # from each slice and pad to its inputs); a tensor two consumers need differently
            # is the conflict, not whichever consumer a forward walk reached first.
            while self.head < len(self.queue):
                src = self.queue[self.head]
                self._checkpoint(src)
                self.head += 1
                if id(src) not in self.inputs:
                    self._step_up(src)
            # Then the rest (other outputs' branches) both ways, checking every edge.
            # Inputs are walked through last: an input's alignment is whichever consumer
            # reached it first and means nothing to its other consumers, so those are
            # reached from their own consumers when they can be.
            self.phase = 2
            self.rest = [t for t in self.result if id(t) not in self.inputs]
            self.later = [t for t in self.result if id(t) in self.inputs]
            self.rest_head = self.later_head = 0
        while self.rest_head < len(self.rest) or self.later_head < len(self.later):
            if self.rest_head < len(self.rest):
                src = self.rest[self.rest_head]
                self._checkpoint(src)
                self.rest_head += 1
            else:
                src = self.later[self.later_head]
                self._checkpoint(src)
                self.later_head += 1
            self._step_both(src)
        return self.result

    def _step_up(self, src: TensorView) -> None:
        result = self.result
        for nb in producers_of(src):
            if nb in result and id(nb) in self.inputs:
                self._share(nb, src)
                continue
            al = c2p(src, nb, result[src], self.maps)
            self._check_output(nb, al, src)
            if nb in result:
                if not same_alignment(result[nb], al):
                    raise ConflictError(
                        f"{nb.short_name} is needed under different resizes" + NOT_RECOMPUTED, nb, src)
                self._extend(nb, al)
                continue
            result[nb] = al
            self.queue.append(nb)

    def _step_both(self, src: TensorView) -> None:
        result, inputs = self.result, self.inputs
        for nb, is_consumer in [*((c, True) for c in consumers_of(src)),
                                *((p, False) for p in producers_of(src))]:
            if id(src) in inputs and (nb in result or not self.through_inputs):
                continue  # an input's alignment means nothing to its other consumers
            if nb in result and id(nb) in inputs:
                # An input is read from global memory wherever it is needed.
                self._share(nb, src)
                continue
            src_al = result[src]
            if id(src) in inputs:
                # Read from global memory, an input offers its other consumers its
                # plain index space, not the resized loop of the consumer that reached it.
                src_al = {k: _without_resizes(e) for k, e in src_al.items()}
            al = p2c(src, nb, src_al, self.maps) if is_consumer else c2p(src, nb, src_al, self.maps)
            self._check_output(nb, al, None if is_consumer else src)
            if nb in result:
                if same_alignment(result[nb], al):
                    self._extend(nb, al)
                else:
                    # The shared tensor is the producer of the edge.
                    shared, user = (src, nb) if is_consumer else (nb, src)
                    raise ConflictError(
                        f"{shared.short_name} is needed under different resizes" + NOT_RECOMPUTED,
                        shared, user)
                continue
            result[nb] = al
            (self.later if id(nb) in inputs else self.rest).append(nb)

    def translated(self, fusion: Fusion, vals: dict[Val, Val]) -> AlignWalk:
        """This walk as the same walk of `fusion`, a clone of the walked fusion that shares
        its domains (`vals`: the walked fusion's vals -> the clone's): alignments hold ids
        and Resizes only, which the clone shares, and the steps and queues hold tensors,
        which are mapped. The clone gets maps of its own."""
        walk = object.__new__(AlignWalk)
        walk.__dict__.update(self.__dict__)
        walk.ref = ref = vals[self.ref]  # type: ignore[assignment]
        walk.maps = PairwiseMaps()
        walk.inputs = {id(v) for v in fusion.inputs}
        walk.outputs = {id(v) for v in fusion.outputs if v is not ref}
        walk.result = {vals[t]: dict(al) for t, al in self.result.items()}  # type: ignore[misc]
        walk.shared = {vals[t] for t in self.shared}  # type: ignore[misc]
        walk.queue, walk.rest, walk.later = ([vals[t] for t in q]  # type: ignore[misc]
                                             for q in (self.queue, self.rest, self.later))
        walk.undo = [(vals[t], k) for t, k in self.undo]  # type: ignore[misc]
        walk.steps = [(vals[s[0]], *s[1:]) for s in self.steps]  # type: ignore[misc]
        return walk


def _outputs_like(fusion: Fusion, ref: TensorView, ref_ids: list[IterDomain]) -> list[tuple[TensorView, Alignment]]:
    """The other outputs whose every axis is exactly the reference's (mapped across ops
    without a resize or reshape between them, nvFuser's exact graph) and that the reference
    is not computed from, each with that plain alignment. The walk starts from them as from
    the reference: their branches are then aligned from their consumers' side, as the
    reference's are, instead of forwards from whichever tensor they share with it."""
    upstream = upstream_tvs(ref)
    candidates = [v for v in fusion.outputs if isinstance(v, TensorView) and v is not ref
                  and v not in upstream and v not in fusion.inputs]
    if not candidates:
        return []
    exact = exact_classes(fusion)
    axis_of = {exact.find(i): k for k, i in enumerate(ref_ids)}
    found = []
    for out in candidates:
        ids = [i for i in out.domain.logical if not i.is_reduction]
        ks = [axis_of.get(exact.find(i)) for i in ids]
        if len(ids) == len(ref_ids) and None not in ks and len(set(ks)) == len(ks):
            found.append((out, {k: (i, ()) for k, i in zip(ks, ids)}))
    return found


def _without_resizes(e: Entry) -> Entry:
    """An input's entry as its other consumers see it: its plain index space."""
    got = map_leaves((e[0], ()), lambda i, _: (i, ()))
    assert got is not None
    return got
