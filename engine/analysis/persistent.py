"""Reductions and persistent buffers, as nvFuser's scheduler_utils sees them.

A persistent buffer is a tensor computed before a reduction and read again after
it (by a consumer that also depends on the reduction's result): a normalization
kernel has to keep it alive, in registers or shared memory, while the reduction
runs (nvFuser's scheduler_utils::persistentBuffers). A buffer whose values can be
recomputed from fusion inputs through pointwise ops only is *projectable*: keeping
the inputs instead (e.g. a bf16 input rather than its float cast) can halve the
buffer (project_persistent_buffers).

Reduction properties (nvFuser's getReductionProperties): whether a reduction is on
the fastest (innermost in memory) dimension, and how many elements it reduces and
iterates, at runtime sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.dependencies import downstream_tvs, upstream_tvs
from engine.ir.indexing_exprs import INDEXING_OPS
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import consumers_of, logical_map, producers_of
from engine.ir.tensorview import TensorView

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo

# Ops whose output can be recomputed element by element from its inputs: the only
# ops a projected (recomputed) buffer may go through.
_POINTWISE = (ex.UnaryOp, ex.BinaryOp, ex.TernaryOp, ex.BroadcastOp, ex.ExpandOp)


def _is_copy(e: ex.Expr) -> bool:
    """A set that copies element by element (not a permute, not a segment boundary)."""
    return isinstance(e, ex.LoadStoreOp) and e.kind == "Set" and not e.is_permute


def has_exp_op(fusion: Fusion) -> bool:
    """Whether `fusion` computes an exp (nvFuser's inner persistent heuristics give such
    kernels fewer warps and more registers besides their buffers)."""
    return any(isinstance(e, ex.UnaryOp) and e.op == "exp" for e in fusion.exprs())


def is_reduction_tv(tv: TensorView) -> bool:
    return isinstance(tv.definition, (ex.ReductionOp, ex.WelfordOp)) and any(
        i.is_reduction for i in tv.domain.logical
    )


def is_trivial_reduction_tv(tv: TensorView) -> bool:
    """A reduction whose reduced axes all have one element (a sum over a size-1 broadcast
    axis, as Thunder's layer-norm backward does on [N, 1] tensors): each output element
    is its one input element, a squeeze in all but name."""
    red = [i for i in tv.domain.logical if i.is_reduction]
    return bool(red) and all(_is_const_one(i) for i in red)


def reduction_tvs(fusion: Fusion) -> list[TensorView]:
    """Tensors defined by a reduction, in topological order; of a Welford's outputs
    only the first (avg) stands for the op, as nvFuser's getReductionTvs.

    Trivial reductions (is_trivial_reduction_tv) are left out, as nvFuser's
    getReductionTvs leaves them out (nvFuser now makes them squeezes when the fusion is
    defined): they reduce nothing, so they are neither inner nor outer reductions and
    keep no buffer alive; they are scheduled and lowered like the pointwise ops around
    them. A fusion whose reductions are all trivial keeps them, for the reduction
    scheduler, the only one here that takes a reduction op."""
    out: list[TensorView] = []
    trivial: list[TensorView] = []
    for e in fusion.exprs():
        if isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
            tv = e.outputs[0]
            if isinstance(tv, TensorView) and is_reduction_tv(tv):
                (trivial if is_trivial_reduction_tv(tv) else out).append(tv)
    return out if out else trivial


def sibling_tvs(tv: TensorView) -> list[TensorView]:
    e = tv.definition
    if e is None:
        return [tv]
    return [o for o in e.outputs if isinstance(o, TensorView)]


@dataclass
class PersistentBufferInfo:
    """Persistent buffers of a fusion, and for each reduction the buffers live across it."""

    persistent_buffers: list[TensorView] = field(default_factory=list)
    # buffer -> the fusion inputs it can be recomputed from (projectable buffers only)
    projectable: dict[TensorView, list[TensorView]] = field(default_factory=dict)
    # reduction tv -> the buffers that must stay alive across it
    live_across: dict[TensorView, list[TensorView]] = field(default_factory=dict)
    # projections may stop at the results of earlier reductions (persistent_buffers'
    # through_results), not only at fusion inputs
    through_results: bool = False

    @property
    def projectable_buffer_inputs(self) -> list[TensorView]:
        out: list[TensorView] = []
        for ins in self.projectable.values():
            out += [i for i in ins if i not in out]
        return out


def pointwise_reach(t: TensorView) -> set[TensorView]:
    """`t` and what is computed from it before any further reduction: a path that passes
    a reduction meets a result only once that reduction is done."""
    seen = {t}
    stack = [t]
    while stack:
        for c in consumers_of(stack.pop()):
            if c not in seen and not is_reduction_tv(c):
                seen.add(c)
                stack.append(c)
    return seen


def persistent_buffers(fusion: Fusion, same_pass: bool = False, through_results: bool = False
                       ) -> PersistentBufferInfo:
    """Tensors used by a reduction (directly or through other ops) and also, outside
    that reduction's input cone, by a consumer whose values meet the reduction's result:
    they must persist across it.

    A consumer whose path to the result passes another reduction (a masked sum and the
    count of its mask, divided afterwards) reads the tensor in that reduction's pass. The
    persistent schedulers compute each reduction in a loop nest of its own, so such a
    tensor persists for them; `same_pass` is for a schedule that computes all reductions
    of the same pattern in one pass (the reduction scheduler), where it does not.

    `through_results`: a buffer may also be projected to the results of the reductions
    computed before each one it lives across (softmax's exp(x - max), from x and the max):
    less storage for more arithmetic, which the schedulers take only when the buffers as
    they are do not fit in registers (engine.schedule.persistent_budget.buffer_bytes)."""
    info = PersistentBufferInfo(through_results=through_results)
    for red in reduction_tvs(fusion):
        up = upstream_tvs(red)
        after: set[TensorView] = set()
        sibs = set(sibling_tvs(red))
        for s in sibs:
            after |= downstream_tvs(s)
        live = []
        for t in sorted(up, key=lambda t: t.name):
            # A consumer outside the reduction's input cone whose values meet the
            # reduction's result (it is after the reduction, or leads to a tensor that
            # is) reads `t` once the reduction is done. The second case is a buffer
            # projected to inputs: the recomputation reads the input, not the result.
            # A Welford's other outputs (var_sum, count) are the reduction itself.
            for c in consumers_of(t):
                if c in up or c in sibs or _looks_up(t, c):
                    continue
                if c in after:
                    live.append(t)
                    break
                if same_pass and is_reduction_tv(c):
                    continue
                if (pointwise_reach(c) if same_pass else downstream_tvs(c)) & after:
                    live.append(t)
                    break
        info.live_across[red] = live
        for t in live:
            if t not in info.persistent_buffers:
                info.persistent_buffers.append(t)
    info.persistent_buffers.sort(key=lambda t: t.name)
    for buf in info.persistent_buffers:
        ins = _projection_inputs(fusion, buf, _results_ready(info, buf) if through_results else set())
        if ins is not None and ins != [buf]:
            info.projectable[buf] = ins
    return info


def _results_ready(info: PersistentBufferInfo, buf: TensorView) -> set[TensorView]:
    """Reduction results (every output of the op) computed before each reduction `buf`
    lives across: a recomputation of `buf` after that reduction may read them, as the
    kernel holds them by then (softmax's exp(x - max) recomputed from x and the max once
    the sum is done)."""
    ready: set[TensorView] | None = None
    for red, live in info.live_across.items():
        if buf not in live:
            continue
        done = {s for t in upstream_tvs(red) if is_reduction_tv(t) for s in sibling_tvs(t)}
        ready = done if ready is None else ready & done
    return ready or set()


def is_reduction_result(tv: TensorView) -> bool:
    """An output of a reduction op (a Welford's var_sum and count too)."""
    e = tv.definition
    return isinstance(e, (ex.ReductionOp, ex.WelfordOp)) and any(
        is_reduction_tv(o) for o in e.outputs if isinstance(o, TensorView))


def _looks_up(t: TensorView, c: TensorView) -> bool:
    """Whether `c` reads `t` only as an indexing op's lookup table: a few elements at
    positions taken from data, read where they lie in global memory (the lookup of a
    fused gather is a fusion input), never a row a kernel must keep (nvFuser's
    persistentBuffers skips these consumers as well)."""
    e = c.definition
    return isinstance(e, INDEXING_OPS) and e.inputs[0] is t and all(v is not t for v in e.inputs[1:])


def _projection_inputs(fusion: Fusion, buf: TensorView, ready: set[TensorView]) -> list[TensorView] | None:
    """The fusion inputs, and reduction results of `ready`, that `buf` is computed from
    through pointwise ops only (at least one input among them), or None."""
    if buf in fusion.inputs:
        return [buf]
    out: list[TensorView] = []
    stack = [buf]
    seen: set[TensorView] = set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in fusion.inputs or t in ready:
            if t not in out:
                out.append(t)
            continue
        e = t.definition
        if e is None or not (isinstance(e, _POINTWISE) or _is_copy(e)):
            return None
        stack.extend(v for v in e.inputs if isinstance(v, TensorView))
    if not any(t in fusion.inputs for t in out):
        return None
    return sorted(out, key=lambda t: t.name)


# ---- sizes -------------------------------------------------------------------------------------

def dtype_bytes(tv: TensorView) -> int:
    return max(1, tv.dtype.bits // 8)


def bytes_per_row(tv: TensorView, info: SchedulerRuntimeInfo, iteration_numel: int,
                  ref: TensorView | None = None) -> int:
    """Bytes of `tv` one reduction (one iteration of the reference `ref`) keeps alive.

    When `tv` has the reference's rank, its axes at the positions `ref` reduces, less
    broadcasts (an expanded broadcast is one value repeated: a [B, S, H] mean expanded
    along H keeps one float per row, a weight expanded along B and S keeps H); otherwise
    its elements divided by the reference's iteration count, at least one row."""
    ids = [i for i in tv.domain.logical if not i.is_reduction]
    if ref is not None and len(ids) == len(ref.domain.logical):
        n = 1
        for i, r in zip(ids, ref.domain.logical):
            if r.is_reduction and not i.is_broadcast:
                n *= info.extent(i)
        return n * dtype_bytes(tv)
    numel = info.numel(tv)
    per_row = max(1, math.ceil(numel / max(1, iteration_numel)))
    return per_row * dtype_bytes(tv)


@dataclass(frozen=True)
class PersistentBufferSize:
    persistent_buffer_size: int  # bytes per reduction row, buffers as they are
    projected_persistent_buffer_size: int  # bytes per row with projectable buffers projected
    can_project: bool


def persistent_buffer_size(
    fusion: Fusion, info: SchedulerRuntimeInfo, buffers: PersistentBufferInfo, iteration_numel: int,
    ref: TensorView | None = None,
) -> PersistentBufferSize:
    """The largest set of buffers alive across one reduction, in bytes per row.

    Buffers alive across different reductions are not alive at once (softmax keeps its
    input across the max and exp(x - max) across the sum), so the size is the maximum
    over reductions of the buffers live across each, as nvFuser's persistentBufferSize.
    Projected: each projectable buffer is replaced by the inputs it is computed from.
    """
    plain = projected = 0
    for _red, live in buffers.live_across.items():
        plain = max(plain, sum(bytes_per_row(t, info, iteration_numel, ref) for t in live))
        kept: list[TensorView] = []
        for t in live:
            for s in buffers.projectable.get(t, [t]):
                if s not in kept:
                    kept.append(s)
        projected = max(projected, sum(bytes_per_row(t, info, iteration_numel, ref) for t in kept))
    can = bool(buffers.projectable) and not _reshaped_near(buffers)
    return PersistentBufferSize(plain, projected if can else plain, can)


def _reshaped_near(buffers: PersistentBufferInfo) -> bool:
    """Whether a reshape reads or is read from a projectable buffer: then the buffers are kept
    as they are (nvFuser refuses projection in any fusion with a reshape). A reshape only on
    other paths (a gathered value's [N, 1] -> [N]) does not touch what projection recomputes:
    the buffer from its inputs through pointwise ops, and the buffer's own uses."""
    for buf in buffers.projectable:
        for t in (buf, *downstream_tvs(buf)):
            if isinstance(t.definition, ex.ViewOp):
                return True
    return False


# ---- reduction properties ------------------------------------------------------------------------

@dataclass(frozen=True)
class ReductionProperties:
    fastest_dim_reduction: bool
    total_reduction_numel: int
    total_iteration_numel: int
    inner_most_dimension_numel: int
    inner_most_dimension_ndims: int
    # the reduction tv's logical ids in memory order (broadcasts dropped)
    memory_order: tuple[IterDomain, ...] = ()


def _is_const_one(i: IterDomain) -> bool:
    e = i.expanded_extent if i.expanded_extent is not None else i.extent
    return e.is_const and e.evaluate() == 1


def memory_order(red: TensorView) -> list[IterDomain]:
    """`red`'s logical ids in the memory order of the fusion input that decides its layout.

    A reduction tensor has no layout of its own; the order that decides "fastest dim" is
    the allocation order of a fusion input it reads (seed 001's permuted input: allocation
    (1, 0, 2)): the nearest input whose allocation domain orders two or more of `red`'s
    non-broadcast axes; without one, the logical order stands (a [1, N] row stored
    "transposed" says nothing of `red`). The full-size tensors `red` is computed from, inputs
    and outputs, vote against it by their bytes per element: where more of them are stored
    in another order (the logical order of row-major inputs and outputs, or another input's
    allocation), that order is taken, so that most of the kernel's traffic is in order (a
    transposed input beside a row-major input and a row-major output of as many axes).
    """
    logical = list(red.domain.logical)
    walked = _producers_mapped(red)
    inputs = [(tv, m) for tv, m in walked if tv in red.fusion.inputs]
    nearest = next(((tv, to_red) for tv, to_red in inputs
                    if tv.domain.has_allocation and len(_mapped_order(tv, to_red)) >= 2), None)
    if nearest is None:
        return logical
    # Voters: the inputs, and the outputs among `red`'s producers (stored by this kernel).
    voters = [(tv, m) for tv, m in walked if tv in red.fusion.inputs or tv in red.fusion.outputs]
    full = max(len(_placed(tv)) for tv, _ in voters)
    votes: dict[object, int] = {}
    for tv, to_red in voters:
        if len(_placed(tv)) == full:
            k = _order_key(tv, to_red)
            votes[k] = votes.get(k, 0) + tv.dtype.bits
    key = _order_key(*nearest)
    best = max(votes, key=lambda k: (votes[k], k == key))
    if best != key and votes[best] > votes.get(key, 0):
        if best == "logical":
            return logical
        nearest = next((tv, to_red) for tv, to_red in inputs if _order_key(tv, to_red) == best)
    tv, to_red = nearest
    order = _mapped_order(tv, to_red)
    return order + [i for i in logical if i not in order]


def _mapped_order(tv: TensorView, to_red: dict[IterDomain, IterDomain]) -> list[IterDomain]:
    """`red`'s ids that `tv`'s non-broadcast allocation ids map to, in `tv`'s memory order."""
    return [to_red[i] for i in tv.domain.maybe_allocation if i in to_red and not i.is_broadcast]


def _order_key(tv: TensorView, to_red: dict[IterDomain, IterDomain]) -> object:
    """"logical" where `tv`'s placed axes are stored in their logical order, else the ids of
    `red` its placed axes map to, in memory order."""
    placed = _placed(tv)
    if placed == [i for i in tv.domain.logical if i in placed]:
        return "logical"
    return tuple(to_red.get(i) for i in placed)


def _placed(tv: TensorView) -> list[IterDomain]:
    """`tv`'s allocation ids that have a place in memory: not broadcast, not reduction, not of
    extent 1 (a size-1 axis moved in the stride order changes no address)."""
    return [i for i in tv.domain.maybe_allocation
            if not i.is_broadcast and not i.is_reduction and not _is_const_one(i)]


def _producers_mapped(red: TensorView) -> list[tuple[TensorView, dict[IterDomain, IterDomain]]]:
    """The tensors `red` depends on, each with the map of its ids to `red`'s logical ids
    (logical maps composed along the producers, nearest first)."""
    frontier: list[tuple[TensorView, dict[IterDomain, IterDomain]]] = [
        (red, {i: i for i in red.domain.logical})
    ]
    seen = {red}
    found = []
    while frontier:
        tv, to_red = frontier.pop(0)
        if tv is not red:
            found.append((tv, to_red))
        for p in producers_of(tv):
            if p in seen:
                continue
            seen.add(p)
            m = logical_map(p, tv)
            frontier.append((p, {pi: to_red[ci] for pi, ci in m.items() if ci in to_red}))
    return found


def reduction_properties(red: TensorView, info: SchedulerRuntimeInfo) -> ReductionProperties:
    order = [i for i in memory_order(red) if not i.is_broadcast and not _is_const_one(i)]
    if not order:
        order = [i for i in red.domain.logical if not i.is_broadcast]
    red_numel = math.prod(info.extent(i) for i in order if i.is_reduction)
    iter_numel = math.prod(info.extent(i) for i in order if not i.is_reduction)
    fastest = bool(order) and order[-1].is_reduction
    inner: list[IterDomain] = []
    for i in reversed(order):
        if i.is_reduction != fastest:
            break
        inner.append(i)
    inner_numel = math.prod(info.extent(i) for i in inner)
    return ReductionProperties(
        fastest_dim_reduction=fastest,
        total_reduction_numel=red_numel,
        total_iteration_numel=iter_numel,
        inner_most_dimension_numel=inner_numel,
        inner_most_dimension_ndims=len(inner),
        memory_order=tuple(order),
    )


def is_fastest_dim_reduction(red: TensorView) -> bool:
    order = [i for i in memory_order(red) if not i.is_broadcast and not _is_const_one(i)]
    return bool(order) and order[-1].is_reduction


def reduction_type(reds: list[TensorView]) -> str:
    """'inner', 'outer', 'inner_outer' or 'none', as nvFuser's getReductionType."""
    if not reds:
        return "none"
    kinds = {is_fastest_dim_reduction(r) for r in reds}
    if kinds == {True}:
        return "inner"
    if kinds == {False}:
        return "outer"
    return "inner_outer"


def reduction_pattern(red: TensorView) -> tuple[bool, ...]:
    """Reduction/iteration pattern of `red` in memory order, unit axes dropped: two
    reductions can share one schedule only when their patterns are equal."""
    return tuple(i.is_reduction for i in pattern_order(red))


def pattern_order(red: TensorView) -> list[IterDomain]:
    """memory_order without broadcast and unit axes: the axes a schedule of `red` splits."""
    return [i for i in memory_order(red) if not i.is_broadcast and not _is_const_one(i)]
