"""The pointwise scheduler's reference: the output whose axes cover every input's.

nvFuser's DomainMap::isValidReference and findReferenceTensorView: a schedule made on
the reference and propagated to every tensor leaves no axis of an input unscheduled.
The transpose scheduler takes its groups' references with the same test.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import consumers_of, logical_map, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.tools import global_only

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion


def _concrete(tv: TensorView) -> list[IterDomain]:
    # Reduction axes count: a reduction output's reduced axes map to its input's, as in
    # nvFuser's compute-at map (pointwise refuses reductions later, with its own reason).
    return [i for i in tv.domain.logical if not i.is_broadcast]


def covers_inputs(fusion: Fusion, ref: TensorView) -> bool:
    """Whether every concrete axis of every input maps to an axis of `ref` (nvFuser's
    DomainMap::isValidReference): otherwise propagating `ref`'s schedule leaves those
    axes unscheduled. Axes are followed through logical maps; a reshape is crossed as
    a whole (its output covered means its input is). Global-only tensors (offsets) and
    inputs read only as an indexing op's lookup table are not required to map."""
    # A tensor is walked again whenever its coverage grows: its edges and axes are
    # found once per walk.
    concrete: dict[TensorView, set[IterDomain]] = {}
    edges: dict[TensorView, list[tuple[TensorView, dict[IterDomain, IterDomain] | None]]] = {}

    def concrete_of(tv: TensorView) -> set[IterDomain]:
        got = concrete.get(tv)
        if got is None:
            got = concrete[tv] = set(_concrete(tv))
        return got

    # The inputs that must be covered, each with the axes it still lacks: coverage only
    # grows, so the walk stops once none is left (what it would cover after that cannot
    # change the answer).
    lacking: dict[TensorView, set[IterDomain]] = {}
    # Lookup tables are global-only too, but one also read elementwise must be covered.
    keep = global_only(fusion) - tools.lookup_inputs(fusion)
    lookup_only = tools.INDEXING_OPS
    for tv in fusion.inputs:
        if not isinstance(tv, TensorView) or tv in keep or not _concrete(tv):
            continue
        uses = fusion.uses_of(tv)
        if uses and all(isinstance(e, lookup_only) and e.inputs[0] is tv for e in uses):
            continue
        if not uses:
            continue
        lacking[tv] = set(_concrete(tv))
    if not lacking:
        return True

    def reached(tv: TensorView, have: set[IterDomain]) -> bool:
        """Note `tv`'s coverage; whether every input is now covered."""
        need = lacking.get(tv)
        if need is not None and need <= have:
            del lacking[tv]
        return not lacking

    covered: dict[TensorView, set[IterDomain]] = {ref: set(concrete_of(ref))}
    if reached(ref, covered[ref]):
        return True
    queue = deque([ref])
    while queue:
        src = queue.popleft()
        have = covered[src]
        full = have >= concrete_of(src)
        out = edges.get(src)
        if out is None:
            out = edges[src] = _coverage_edges(src)
        for nb, m in out:
            if m is None:  # across a reshape: all or nothing
                got = set(concrete_of(nb)) if full else set()
            else:
                got = {m[i] for i in have if i in m}
            old = covered.get(nb, set())
            if not got <= old:
                covered[nb] = now = old | got
                queue.append(nb)
                if reached(nb, now):
                    return True
    return False


def _coverage_edges(src: TensorView) -> list[tuple[TensorView, dict[IterDomain, IterDomain] | None]]:
    """covers_inputs' edges out of `src`: each consumer, then each producer, with the map
    from src's logical ids to the neighbour's (None across a reshape)."""
    consumers = consumers_of(src)
    out: list[tuple[TensorView, dict[IterDomain, IterDomain] | None]] = []
    for nb in [*consumers, *producers_of(src)]:
        is_consumer = nb in consumers
        consumer = nb if is_consumer else src
        if isinstance(consumer.definition, ex.ViewOp):
            out.append((nb, None))
        elif is_consumer:
            out.append((nb, logical_map(src, nb, map_broadcast=False)))
        else:
            out.append((nb, {c: p for p, c in logical_map(nb, src, map_broadcast=False).items()}))
    return out


def find_reference(fusion: Fusion) -> TensorView | None:
    """The output with the most logical axes (the first on ties) whose axes cover every
    input's, as nvFuser's findReferenceTensorView; fusion inputs and global-only tensors
    cannot lead."""
    keep = global_only(fusion)
    best: TensorView | None = None
    for out in fusion.outputs:
        if not isinstance(out, TensorView) or out in fusion.inputs or out in keep:
            continue
        if (best is None or out.ndim > best.ndim) and covers_inputs(fusion, out):
            best = out
    return best


def schedule_axes(fusion: Fusion, ref: TensorView) -> list[IterDomain]:
    """The reference's axes (reduction axes left out) in the order the pointwise schedule
    merges them, outermost first: its memory order when its allocation domain permutes its
    logical axes (a channels-last output: C innermost), so that the threads and vectors run
    along memory, as nvFuser's reorderLoopAsAllocationMap orders the reference's loop;
    otherwise, and in fusions with a reshape (whose merged axes the schedule keeps
    together), logical order."""
    logical = [i for i in ref.domain.logical if not i.is_reduction]
    alloc = ref.domain.allocation
    if alloc is None or any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
        return logical
    ordered = [i for i in alloc if not i.is_reduction]
    if len(ordered) != len(logical) or {id(i) for i in ordered} != {id(i) for i in logical}:
        return logical
    return ordered
