"""The resize scheduler: fusions of slice, pad and cat with pointwise ops.

Follows nvFuser's ResizeScheduler (csrc/scheduler/resize.cpp) in what it accepts and
why it refuses, and in the shape of its schedule: the reference is the output with
the most logical dims; its innermost axis is split by the vectorization factor, the
rest flattened and split by 128 threads: [BIDx, TIDx(128), V].

Moving the resizes. nvFuser makes every tensor's loop domain exact-mapped with the
reference by propagating each slice's and pad's Resize onto the producers' loop
domains (propagateResizeToInputs), then schedules all loop domains like the
reference. This module does the same in a simplified, explicit form:

1. A walk from the reference over producer and consumer edges (breadth-first, as
   the propagation) records for every tensor, per axis of the reference, which of
   its logical ids plays that axis and the chain of Resize transforms that lie
   between that id and the reference: crossing a pad or slice towards its input
   adds the op's Resize to the chain, crossing it the other way removes it.
2. Each tensor's loop domain is then that id with the chain's Resizes applied (same
   offsets, as new loop-only Resize transforms), in the reference's axis order, and
   the reference's splits and merges are applied the same way to every tensor.
   Producers of a pad thus iterate the padded extent (their values are read only
   inside the original range) and producers of a slice only the sliced range, so
   every tensor can be inlined into its consumers (engine.analysis.replay.loop_map
   matches Resizes of equal offsets).

A tensor that two paths give different chains (a non-fusion-input tensor read by
two different slices, or by a slice and a pointwise op) would need nvFuser's
recomputation of the resize input (RecomputeTv); this engine does not recompute
yet and refuses such fusions with its own reason, as it does fusions with a
reshape (propagating a loop schedule through a reshape's splits is not supported
by this engine's replay). Fusion inputs are exempt: they are read from global
memory wherever their consumers need them, which is also why inputs read by a
slice or pad are not cached (as nvFuser's cacheInputs). The reorder of the
reference to the largest input's allocation order is not done (the fields are
computed and printed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from engine.analysis.logical_map import consumers_of, pairwise_logical_map, producers_of
from engine.analysis.vectorize import vectorization_factor
from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, ParallelType, Resize
from engine.ir.tensorview import TensorView
from engine.ir.verify import verify
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.id_classes import UnionFind, has_non_unique_broadcast
from engine.schedule.params import HeuristicParams, LaunchParams
from engine.schedule.registry import register
from engine.schedule.resize_axes import (
    Entry,
    LoopBuilder,
    ReshapeAxisError,
    derives_from_inner,
    down_through_view,
    has_resize,
    map_leaves,
    merged_broadcast,
    same_chain,
    same_entry,
    up_through_view,
)
from engine.schedule.resize_recompute import privatize_producers, recompute_for
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.schedule.tools import has_reduction, note_transform
from engine.schedule.transpose_groups import group_inputs_outputs_by_inner_dim
from engine.trace import Trace

BDIMX = 128  # nvFuser's resize scheduler uses 128 threads per block
MAX_GDIMX = (1 << 31) - 1  # nvFuser's ResizeParams::max_gdimx


@dataclass(frozen=True)
class ResizeParams(HeuristicParams):
    split_grid_x_dim: bool = False
    largest_input: int = -1
    vectorization_factor: int = 1
    reference: str = ""

    def __str__(self) -> str:
        # nvFuser's ResizeParams::toString (a C++ bool prints as 0/1).
        return "\n".join([
            "", "===== Resize Parameters ========",
            ("Tag: " if self.tag else "") + f"{self.tag} Resize Characteristics:",
            f" split grid x dim: {int(self.split_grid_x_dim)}",
            f" index of largest input: {self.largest_input}",
            f" vectorization factor: {self.vectorization_factor}",
            "====================================",
        ]) + "\n"


def _resize_ops(fusion: Fusion) -> list[ex.Expr]:
    return [e for e in fusion.exprs() if isinstance(e, (ex.SliceOp, ex.PadOp))]


def reference_tensor(fusion: Fusion) -> TensorView | None:
    """The output with the most logical dims; on ties, the one downstream of the most
    slices and pads (every resize must lie between the inputs and the reference: an
    output upstream of a resize is then recomputed, see align), then the first."""
    outs = [v for v in fusion.outputs if isinstance(v, TensorView) and v not in fusion.inputs]
    if not outs:
        return None
    return max(outs, key=lambda v: (v.ndim, len(_upstream_resizes(v)), -outs.index(v)))


def _broadcast_groups(fusion: Fusion) -> UnionFind:
    """nvFuser's broadcast graph, reduced: ids mapped across ops, broadcast with concrete."""
    uf = UnionFind()
    for tv in fusion.tensors():
        for p in producers_of(tv):
            for a, b in pairwise_logical_map(p, tv, map_broadcast=True).items():
                uf.union(a, b)
    return uf


def _defined_upstream(tv: TensorView) -> Iterator[tuple[TensorView, ex.Expr]]:
    """`tv` and every tensor it is computed from that has a definition, each once with its
    definition, depth first."""
    seen: set[int] = set()
    stack = [tv]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        e = t.definition
        if e is None:
            continue
        yield t, e
        stack.extend(producers_of(t))


def _upstream_resizes(tv: TensorView) -> set[int]:
    """ids of the slice/pad exprs that `tv` depends on."""
    return {id(e) for _, e in _defined_upstream(tv) if isinstance(e, (ex.SliceOp, ex.PadOp))}


def _resize_of(tv: TensorView, exprs: set[int]) -> Resize | None:
    """A Resize in the root->logical domain of a slice/pad among `exprs` upstream of tv."""
    for t, e in _defined_upstream(tv):
        if id(e) in exprs:
            for i in t.domain.logical:
                if isinstance(i.definition, Resize):
                    return i.definition
    return None


# ---- alignment of every tensor with the reference ------------------------------------------

# Per reference axis: the tensor's node for it (a logical id, or across a reshape a split
# part or merge of them) and the Resizes between them (see engine.schedule.resize_axes).
Alignment = dict[int, Entry]


class _ConflictError(ScheduleError):
    """`tensor` is needed by `consumer` under another alignment than it has (both None
    when the cause is not one tensor, e.g. a reshape)."""

    def __init__(self, message: str, tensor: TensorView | None = None,
                 consumer: TensorView | None = None, output: TensorView | None = None) -> None:
        super().__init__(message)
        self.tensor = tensor
        self.consumer = consumer
        self.output = output  # an output its producers would give a resized loop


_NOT_RECOMPUTED = ("; recomputing a resize input is supported for pointwise, cast, broadcast, "
                   "expand, squeeze, set, permute, reshape, slice, pad and factory ops only")


def _logical_to_root(tv: TensorView, i: IterDomain) -> tuple[IterDomain, Resize | None]:
    """The root id a logical id comes from, and the Resize between them (None if none)."""
    if tv.domain.root is None or i in tv.domain.root:
        return i, None
    d = i.definition
    if isinstance(d, Resize) and d.in_id in tv.domain.root:
        return d.in_id, d
    raise _ConflictError(f"{tv.short_name}: {i} is made by a reshape")


def _root_to_logical(tv: TensorView, r: IterDomain) -> tuple[IterDomain, Resize | None]:
    logical = tv.domain.logical
    if r in logical:
        return r, None
    for u in r.uses:
        if isinstance(u, Resize) and u.out in logical:
            return u.out, u
    raise _ConflictError(f"{tv.short_name}: {r} goes through a reshape")


class _Maps:
    """The pairwise maps of one fusion while no domain and no op changes, each computed
    once: alignment walks every edge from both ends, and some twice.

    An edge's map depends on the consumer's definition (its op, and where the producer
    sits among its tensor operands) and the two tensors' domains. make_resizes_exclusive
    keeps one _Maps over its attempts: its edits add tensors and swap an op's operand for
    a copy, which leaves the remaining edges' ops, operand positions and domains as they
    were; the definition is part of the key all the same."""

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
        raise _ConflictError(str(err)) from None
    return out


def _c2p(consumer: TensorView, producer: TensorView, al: Alignment, maps: _Maps) -> Alignment:
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


def _p2c(producer: TensorView, consumer: TensorView, al: Alignment, maps: _Maps) -> Alignment:
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
                raise _ConflictError(
                    f"{producer.short_name} is needed under different resizes (its use by "
                    f"{consumer.short_name} is not on the reference's path)" + _NOT_RECOMPUTED,
                    producer, consumer)
            chain = chain[1:]
        return c, chain

    return _map_alignment(al, leaf)


def _same_alignment(a: Alignment, b: Alignment) -> bool:
    """Agreement on the axes both know. One side may lack axes: a producer of a
    broadcast does not have the new broadcast axis its consumer aligns."""
    return all(same_entry(a[k], b[k]) for k in a.keys() & b.keys())


def align(fusion: Fusion, ref: TensorView,
          shared_inputs: set[TensorView] | None = None,
          maps: _Maps | None = None) -> dict[TensorView, Alignment]:
    """Every tensor's alignment with `ref`; raises _ConflictError when one is ambiguous.

    Fusion inputs that consumers need under different alignments are added to
    `shared_inputs`: a cache of such an input would be a conflicted tensor, so the
    scheduler reads them from global memory directly. `maps`: pairwise maps kept from
    an earlier alignment of the fusion (see _Maps for when they still hold).
    """
    walk = _AlignWalk(fusion, ref, maps or _Maps(), shared_inputs is not None)
    try:
        return walk.run()
    finally:
        if shared_inputs is not None:
            shared_inputs |= walk.shared  # found before a conflict too, as they are found


# A walk's state before one of its steps (see _AlignWalk.rewind): the tensor the step
# walks from, the phase, both queues' heads and lengths, how many tensors the result
# holds and how long the undo log is.
_Checkpoint = tuple[TensorView, int, int, int, int, int, int, int, int, int]


class _AlignWalk:
    """align's walk, kept so that make_resizes_exclusive can resume it after an edit.

    The walk is deterministic: each step reads the neighbour lists of the tensor it walks
    from (its producers, or its consumers and producers) and the pairwise maps of those
    edges, and updates the result and the queues. After an edit of the fusion, a walk
    from scratch therefore repeats the old walk's steps exactly up to the first step from
    a tensor whose neighbour lists the edit changed; `rewind` restores the state before
    that step (every change is an append, or logged for undoing), so that `run` goes on
    as a walk from scratch would, and finds the same alignments and conflicts in the same
    order, without repeating the steps before it (every attempt at the same fusion)."""

    def __init__(self, fusion: Fusion, ref: TensorView, maps: _Maps, track_shared: bool) -> None:
        self.ref = ref
        self.maps = maps
        self.track_shared = track_shared
        self.inputs = {id(v) for v in fusion.inputs}
        self.outputs = {id(v) for v in fusion.outputs if v is not ref}
        ref_ids = [i for i in ref.domain.logical if not i.is_reduction]
        self.result: dict[TensorView, Alignment] = {ref: {k: (i, ()) for k, i in enumerate(ref_ids)}}
        self.shared: set[TensorView] = set()
        # Queues are append-only lists with a head: their state is (head, length).
        self.phase = 1
        self.queue: list[TensorView] = [ref]
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
        if (self.track_shared and not _same_alignment(self.result[nb], _c2p(src, nb, self.result[src], self.maps))
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
        for e in al.values():
            b = merged_broadcast(e)
            if b is not None:
                # Its producers would iterate the other part alone, which the lowering
                # cannot index from the merged loop.
                raise _ConflictError(f"{tv.short_name}: a reshape merges its broadcast {b} with "
                                     "another axis; not scheduled by this engine's resize "
                                     "scheduler yet")
        if id(tv) in self.outputs and any(has_resize(e) for e in al.values()):
            raise _ConflictError(
                f"output {tv.short_name} would be written under a resize of the reference "
                f"{self.ref.short_name}" + _NOT_RECOMPUTED, tv if user else None, user,
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
            al = _c2p(src, nb, result[src], self.maps)
            self._check_output(nb, al, src)
            if nb in result:
                if not _same_alignment(result[nb], al):
                    raise _ConflictError(
                        f"{nb.short_name} is needed under different resizes" + _NOT_RECOMPUTED, nb, src)
                self._extend(nb, al)
                continue
            result[nb] = al
            self.queue.append(nb)

    def _step_both(self, src: TensorView) -> None:
        result, inputs = self.result, self.inputs
        for nb, is_consumer in [*((c, True) for c in consumers_of(src)),
                                *((p, False) for p in producers_of(src))]:
            if nb in result and id(src) in inputs:
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
            al = _p2c(src, nb, src_al, self.maps) if is_consumer else _c2p(src, nb, src_al, self.maps)
            self._check_output(nb, al, None if is_consumer else src)
            if nb in result:
                if _same_alignment(result[nb], al):
                    self._extend(nb, al)
                else:
                    # The shared tensor is the producer of the edge.
                    shared, user = (src, nb) if is_consumer else (nb, src)
                    raise _ConflictError(
                        f"{shared.short_name} is needed under different resizes" + _NOT_RECOMPUTED,
                        shared, user)
                continue
            result[nb] = al
            (self.later if id(nb) in inputs else self.rest).append(nb)

    def translated(self, fusion: Fusion, vals: dict[Val, Val]) -> _AlignWalk:
        """This walk as the same walk of `fusion`, a clone of the walked fusion that shares
        its domains (`vals`: the walked fusion's vals -> the clone's): alignments hold ids
        and Resizes only, which the clone shares, and the steps and queues hold tensors,
        which are mapped. The clone gets maps of its own."""
        walk = object.__new__(_AlignWalk)
        walk.__dict__.update(self.__dict__)
        walk.ref = ref = vals[self.ref]  # type: ignore[assignment]
        walk.maps = _Maps()
        walk.inputs = {id(v) for v in fusion.inputs}
        walk.outputs = {id(v) for v in fusion.outputs if v is not ref}
        walk.result = {vals[t]: dict(al) for t, al in self.result.items()}  # type: ignore[misc]
        walk.shared = {vals[t] for t in self.shared}  # type: ignore[misc]
        walk.queue, walk.rest, walk.later = ([vals[t] for t in q]  # type: ignore[misc]
                                             for q in (self.queue, self.rest, self.later))
        walk.undo = [(vals[t], k) for t, k in self.undo]  # type: ignore[misc]
        walk.steps = [(vals[s[0]], *s[1:]) for s in self.steps]  # type: ignore[misc]
        return walk


def _graph_state(fusion: Fusion) -> dict[int, tuple[ex.Expr, list[Val]]]:
    """The live exprs and their operand lists: what the neighbour lists of tensors are made
    of. The lists themselves, not copies: an expr is rewired by giving it a new operand
    list (Fusion.replace_input_of), never by editing its list."""
    return {id(e): (e, e.inputs) for e in fusion.exprs()}


def _touched(before: dict[int, tuple[ex.Expr, list[Val]]],
             fusion: Fusion) -> tuple[set[TensorView], set[TensorView]]:
    """The tensors whose producers, and those whose consumers, may differ from `before`
    (_graph_state of the fusion before an edit): the outputs, and the operands, of every
    expr that appeared, went dead or was rewired."""
    after = _graph_state(fusion)
    producers: set[TensorView] = set()
    consumers: set[TensorView] = set()
    for k in before.keys() | after.keys():
        b, a = before.get(k), after.get(k)
        if b is not None and a is not None and b[1] is a[1]:
            continue
        for e, operands in (x for x in (b, a) if x is not None):
            producers.update(v for v in e.outputs if isinstance(v, TensorView))
            consumers.update(v for v in operands if isinstance(v, TensorView))
    return producers, consumers


def make_resizes_exclusive(fusion: Fusion, ref: TensorView, trace: Trace | None = None,
                           shared_inputs: set[TensorView] | None = None,
                           first: tuple[_ConflictError, _AlignWalk] | None = None) -> None:
    """Recompute tensors that two resize paths need differently until `align` succeeds.

    Each conflict recomputes the shared tensor for one of its consumers; the conflict
    then moves to its producers, and ends at fusion inputs, which are read from global
    memory wherever needed. Raises _ConflictError when a tensor cannot be recomputed.
    `shared_inputs` receives what the successful alignment finds (see align), which the
    scheduler would otherwise align the unchanged fusion again for. `first`: the conflict
    that aligning `fusion` as it is raises and the walk that raised it, when the caller
    has found them already.
    """
    limit = 4 * len(fusion.exprs()) + 8
    made_for: dict[TensorView, TensorView] = {}  # copy -> the consumer it was made for
    privatized: set[TensorView] = set()
    # One walk over all attempts: after each recompute it resumes before the first step
    # the edit changed (see _AlignWalk), as a walk from scratch would go. The edges a
    # recompute leaves alone keep their maps (see _Maps).
    walk = _AlignWalk(fusion, ref, _Maps(), shared_inputs is not None) if first is None else first[1]
    for _ in range(limit):
        try:
            if first is not None:
                known, first = first[0], None
                raise known
            walk.run()
            if shared_inputs is not None and walk.shared:
                shared_inputs |= walk.shared
            return
        except _ConflictError as c:
            before = _graph_state(fusion)
            if c.output is not None:
                if c.output in privatized or not privatize_producers(fusion, c.output):
                    raise
                privatized.add(c.output)
                note_transform(trace, c.output.short_name, "its producers are recomputed for it: the "
                      "reference needs them under a resize")
                walk.rewind(_touched(before, fusion))
                continue
            if c.tensor is None or c.consumer is None or made_for.get(c.tensor) is c.consumer:
                raise  # a copy made for this consumer conflicts again: no copy can help
            copy = recompute_for(fusion, c.tensor, c.consumer)
            if copy is None:
                raise
            made_for[copy] = c.consumer
            note_transform(trace, copy.short_name, f"recomputes {c.tensor.short_name} for "
                  f"{c.consumer.short_name}: the two need it under different resizes")
            walk.rewind(_touched(before, fusion))
    raise _ConflictError("resize inputs could not be made exclusive")


def _without_resizes(e: Entry) -> Entry:
    """An input's entry as its other consumers see it: its plain index space."""
    got = map_leaves((e[0], ()), lambda i, _: (i, ()))
    assert got is not None
    return got


def _apply_alignment(tv: TensorView, al: Alignment, n_ref: int) -> list[int]:
    """Resize, split, merge and reorder tv's loop domain into the reference's axis order.

    Returns the reference axes tv has, in order; tv's own unmapped axes go last.
    """
    builder = LoopBuilder(tv)
    for k in sorted(al):
        al[k] = (builder.build(al[k]), ())
    verify(tv)
    present = [k for k in range(n_ref) if k in al]
    mapped = [al[k][0] for k in present]
    rest = [i for i in tv.domain.loop if i not in mapped]
    order = [tv.domain.loop.index(i) for i in [*mapped, *rest]]
    if order != list(range(tv.nloop)):
        tv.reorder(order)
    return present


@register
class ResizeScheduler(Scheduler):
    type = SchedulerType.resize

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        ops = _resize_ops(fusion)
        if not ops:
            return "No resize op to schedule"
        if has_reduction(fusion):
            return "No support for reduction ops"
        if has_non_unique_broadcast(fusion):
            return "Broadcasting dimension might be broadcasting to multiple sizes."
        groups = _broadcast_groups(fusion)
        members: dict[IterDomain, list[IterDomain]] = {}
        for i in list(groups.parent):
            members.setdefault(groups.find(i), []).append(i)
        for e in ops:
            out = e.outputs[0]
            assert isinstance(out, TensorView)
            for i in out.domain.logical:
                rz = i.definition
                if not isinstance(rz, Resize):
                    continue
                if rz.out.is_broadcast:
                    return "Resize to a broadcast ID is not allowed."
                # The resize's input maps (root copy) to the producer's id; look at its group.
                inp = e.inputs[0]
                assert isinstance(inp, TensorView)
                inv = {c: p for p, c in pairwise_logical_map(inp, out).items()}
                src = inv.get(rz.in_id, rz.in_id)
                group = members.get(groups.find(src), [src])
                if src.is_broadcast or any(g.is_broadcast for g in group):
                    return "Resize of a broadcast ID is not allowed."
        ref = reference_tensor(fusion)
        if ref is None:
            return "No reference found"
        if len(group_inputs_outputs_by_inner_dim(fusion)) >= 2:
            return "Transpose-like patterns not supported."
        walk = _AlignWalk(fusion, ref, _Maps(), track_shared=False)
        try:
            walk.run()
            return None
        except _ConflictError as c:
            conflict = c
        # Recomputation is tried on a copy: a verdict never changes the fusion. It adds
        # tensors and rewires ops but never edits a domain or an op's attributes, so the
        # copy shares the domains and the attributes that hold only constants.
        domains = _domains(fusion) + _constant_attributes(fusion)
        copy, vals = fusion.clone(shared=domains)
        # The copy aligns as the fusion did, up to the same conflict: its first attempt.
        first = _ConflictError(str(conflict), *(None if t is None else vals[t] for t in (  # type: ignore[misc]
            conflict.tensor, conflict.consumer, conflict.output)))
        try:
            make_resizes_exclusive(copy, vals[ref], first=(first, walk.translated(copy, vals)))  # type: ignore[arg-type]
        except _ConflictError as c:
            return _resize_between_outputs(fusion, ref) or str(c)
        finally:
            copy.release(shared=domains)  # not read again (see Fusion.release)
        return None

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> ResizeParams:
        outs = [v for v in fusion.outputs if isinstance(v, TensorView)]
        largest_out = max(outs, key=lambda t: (info.numel(t), -outs.index(t)))
        n = info.numel(largest_out)
        ins = [(k, v) for k, v in enumerate(fusion.inputs) if isinstance(v, TensorView)]
        largest_in = -1
        if ins:
            largest_in = max(ins, key=lambda kv: (info.numel(kv[1]), -kv[0]))[0]
        ref = reference_tensor(fusion)
        assert ref is not None
        # Only the innermost axis is vectorized, as nvFuser's resize scheduler.
        vec = vectorization_factor(fusion, ref, info, break_point=max(ref.ndim - 1, 0))
        split_grid = -(-n // BDIMX) > MAX_GDIMX
        lines = [f"reference {ref.short_name}; largest output {largest_out.short_name} "
                 f"with {n} elements", f"split grid x dim: ceilDiv({n}, {BDIMX}) > {MAX_GDIMX} "
                 f"is {split_grid}", f"index of largest input: {largest_in}", *vec.derivation]
        params = ResizeParams(
            tag="Resize heuristics", split_grid_x_dim=split_grid, largest_input=largest_in,
            vectorization_factor=vec.factor, reference=ref.short_name,
            lparams=LaunchParams(bdimx=BDIMX),
            index_type="int" if info.index_type().name == "Int32" else "int64_t",
        )
        params = replace(params, derivation=tuple(lines))
        if trace is not None:
            for line in lines:
                trace.event("heuristic", "resize", line)
        return params

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        assert isinstance(params, ResizeParams)
        _schedule_resize(fusion, params, trace)


def _domains(fusion: Fusion) -> list[object]:
    """Every tensor's TensorDomain and the ids of its root, logical, loop and allocation."""
    out: dict[int, object] = {}
    for tv in fusion.all_vals:
        if isinstance(tv, TensorView):
            dom = tv.domain
            out[id(dom)] = dom
            for i in (*dom.maybe_root, *dom.logical, *dom.loop, *(dom.allocation or ())):
                out[id(i)] = i
    return list(out.values())


def _constant_attributes(fusion: Fusion) -> list[object]:
    """The exprs' attribute dicts that hold only constants (see segment.cut.constant)."""
    from engine.segment.cut import constant

    return [e.attributes for e in fusion.all_exprs if e.attributes and constant(e.attributes)]


def _resize_between_outputs(fusion: Fusion, ref: TensorView) -> str | None:
    """nvFuser's reason when an output and the reference lie on different sides of a
    resize. nvFuser refuses every such fusion; this engine refuses only those whose
    outputs could not be given their own copies of the resized producers."""
    ref_resizes = _upstream_resizes(ref)
    for out in fusion.outputs:
        if not isinstance(out, TensorView) or out is ref:
            continue
        diff = ref_resizes ^ _upstream_resizes(out)
        if diff:
            rz = _resize_of(out, diff) or _resize_of(ref, diff)
            return ("Resize between reference and output not allowed. "
                    f"Reference: {ref}. Output: {out}. Resize: {rz}")
    return None


def _private_caches(fusion: Fusion, tv: TensorView, trace: Trace | None) -> None:
    """One cache of input `tv` per op that reads it: its readers need it under different
    resizes (shifted by a slice or pad), which one cache could not serve, and each cache
    is then a (vectorizable) copy aligned like its only reader."""
    uses = fusion.uses_of(tv)
    if len(uses) < 2 or tools.read_by_resize(fusion, tv) or tools.global_only_keep(fusion)(tv):
        return
    try:
        cache = tv.cache_after()
    except ScheduleError as e:
        note_transform(trace, tv.short_name, f"input not cached: {e}")
        return
    readers = [c for u in uses for c in u.outputs if isinstance(c, TensorView)]
    for reader in readers[1:]:
        recompute_for(fusion, cache, reader)
    note_transform(trace, tv.short_name, f"input cached once per reader ({len(readers)}): they need it "
          "under different resizes")


def _schedule_resize(fusion: Fusion, p: ResizeParams, trace: Trace | None) -> None:
    # Inputs read by a slice or pad stay in global memory, read where the op needs them
    # (tools.cache_inputs, as nvFuser's cacheInputs); inputs whose readers need them under
    # different resizes get a cache per reader.
    ref = reference_tensor(fusion)
    assert ref is not None
    shared: set[TensorView] = set()
    make_resizes_exclusive(fusion, ref, trace, shared)
    tools.cache_inputs(fusion, keep=lambda t: t in shared, trace=trace)
    for tv in [v for v in fusion.inputs if v in shared]:
        _private_caches(fusion, tv, trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    ref = reference_tensor(fusion)
    assert ref is not None
    n_ref = ref.ndim
    alignment = align(fusion, ref)
    vec = p.vectorization_factor
    inputs = [v for v in fusion.inputs if isinstance(v, TensorView)]
    # Private copies of a producer without inputs (a `full` sliced twice, made exclusive
    # above) can leave an output in a component of its own, which the reference's walk
    # never reaches: it is aligned with itself, else every thread would write it whole.
    components = [(ref, alignment)]
    reached = set(alignment)
    for out in fusion.outputs:
        if isinstance(out, TensorView) and out not in reached and out not in inputs:
            own = align(fusion, out)
            components.append((out, own))
            reached |= own.keys()
            note_transform(trace, out.short_name, f"shares no tensor with the reference {ref.short_name}: "
                  "its tensors are aligned with it")
    scheduled: list[TensorView] = []
    for lead, tv, al in [(lead, tv, al) for lead, found in components for tv, al in found.items()]:
        if tv in inputs:
            continue
        present = _apply_alignment(tv, al, lead.ndim)
        n = len(present)
        # [ref axes..., own axes...]: vectorize split of the innermost reference axis (only
        # in the reference's component, whose tensors the heuristic's factor was found for).
        vectorized = vec > 1 and lead is ref and bool(present) and present[-1] == n_ref - 1
        if vectorized:
            tv.split(n - 1, vec)
        # Flatten the reference axes (all but the vector) into one.
        for _ in range(n - 1):
            tv.merge(0, 1)
        if n >= 1:
            tv.split(0, BDIMX)
            tv.axis(1).parallelize(ParallelType.block_x)
            if p.split_grid_x_dim:
                tv.split(0, MAX_GDIMX)
                tv.axis(1).parallelize(ParallelType.grid_x)
            else:
                tv.axis(0).parallelize(ParallelType.grid_x)
        scheduled.append(tv)
        note_transform(trace, tv.short_name, "aligned with the reference "
              f"{lead.short_name} (resizes moved onto its loop domain) and scheduled "
              f"[BIDx, TIDx({BDIMX})" + (f", V({vec})]" if vectorized else "]"))
    if vec > 1:
        # Vectorize where global memory is touched: input caches (or the slice/pad
        # that reads an input directly) and outputs, when their innermost axis is
        # the reference's.
        targets: list[TensorView] = []
        for v in fusion.outputs:
            if isinstance(v, TensorView) and v not in inputs:
                targets.append(v)
        for i in inputs:
            targets += [c for c in consumers_of(i) if c not in targets]
        for tv in targets:
            al = alignment.get(tv)
            if al is None or tv not in scheduled:
                continue
            k = n_ref - 1
            logical = [i for i in tv.domain.logical if not i.is_reduction]
            node = al[k][0] if k in al else None
            if isinstance(node, IterDomain) and logical and derives_from_inner(node, logical[-1]):
                tv.axis(_vec_axis(tv)).parallelize(ParallelType.vectorize)
                note_transform(trace, tv.short_name, f"vectorized by {vec}")
    tools.inline_most(fusion)


def _vec_axis(tv: TensorView) -> int:
    """Position of the vectorize split's inner axis: right after the TIDx axis."""
    for k, i in enumerate(tv.domain.loop):
        if i.parallel_type == ParallelType.block_x:
            return k + 1
    raise ScheduleError(f"{tv.short_name}: no TIDx axis to vectorize after")


__all__ = ["ResizeParams", "ResizeScheduler", "align", "reference_tensor"]
