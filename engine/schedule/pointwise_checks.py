"""The pointwise scheduler's compile-time checks beyond finding a reference: reshapes
the schedule cannot carry, reductions, and block quantization's rules.

With a reshape, the flattened schedule is tried on a copy and refused, naming the
tensor, when some tensor could not be inlined into its consumers
(reshape_schedule_reason).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir import exprs as ex
from engine.ir.iterdomain import IterDomain
from engine.ir.logical_map import consumers_of
from engine.ir.loop_map import loop_maps_frozen
from engine.ir.quant_exprs import BlockQuantizationOp
from engine.ir.scalar import same_scalar
from engine.ir.tensorview import MemoryType, TensorView, verification_deferred
from engine.schedule.params import LaunchParams
from engine.schedule.pointwise_heuristics import THREADS_X, PointwiseParams
from engine.schedule.pointwise_reference import find_reference
from engine.schedule.pointwise_schedule import schedule_pointwise

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion


def conflicting_reshapes(fusion: Fusion) -> bool:
    """Whether tensors that share their axes (connected by any op but a reshape) are
    reshaped to different shapes: transform propagation from one reference cannot
    replay both (nvFuser's requiresForwardViewReplay, by shapes rather than by exact
    IterDomain sets: conservative where a broadcast joins two tensors)."""
    parent: dict[TensorView, TensorView] = {}

    def find(t: TensorView) -> TensorView:
        while parent.setdefault(t, t) is not t:
            t = parent[t]
        return t

    views: list[ex.ViewOp] = []
    for e in fusion.exprs():
        if isinstance(e, ex.ViewOp):
            views.append(e)
            continue
        tvs = [v for v in [*e.inputs, *e.outputs] if isinstance(v, TensorView)]
        for t in tvs[1:]:
            parent[find(t)] = find(tvs[0])
    shapes: dict[TensorView, set[tuple[str, ...]]] = {}
    for e in views:
        shape = tuple(i.extent.inline() for i in e.output.domain.logical)
        shapes.setdefault(find(e.input), set()).add(shape)
    return any(len(v) > 1 for v in shapes.values())


def reshape_schedule_reason(fusion: Fusion) -> str | None:
    """With a reshape, whether the 1-D schedule gives every tensor a loop its consumers
    share. Transform propagation carries the reference's flattened loop across a reshape
    from the full row-major merge of one side's axes to the other's; a tensor whose axes
    reach the reshape in another order (a permute of the reshaped tensor between the
    reference and the reshape) cannot be flattened both ways, and would be read by its
    consumers at elements other threads computed. The schedule is tried on a copy (the
    verdict never changes the fusion) and refused, naming the tensor, when a local
    tensor with consumers keeps a parallel axis outside its inlined loops; the
    segmenter then splits the fusion. None when it schedules consistently."""
    if not any(isinstance(e, ex.ViewOp) for e in fusion.exprs()):
        return None
    if any(isinstance(e, BlockQuantizationOp) for e in fusion.exprs()):
        return None  # the block schedule is not the flattened one (and takes no reshape)
    # Most trials succeed: tried first with one verification at the end (see
    # verification_deferred); a trial that fails in any way is made again step by step,
    # whose first error (or crash) is the verdict's.
    copy, _ = fusion.clone()
    try:
        # The verification at the end asks for the loop maps that inlining computed
        # (they are keyed by what they depend on: the trial may change the schedule).
        with loop_maps_frozen(), verification_deferred():
            _trial_schedule(copy)
        return _unscheduled_reason(fusion, copy)
    except Exception:  # noqa: BLE001 - any failure: the verified trial below says what it is
        pass
    finally:
        copy.release()  # the trial is not read again (see Fusion.release)
    copy, _ = fusion.clone()
    try:
        return _trial_schedule_reason(fusion, copy)
    finally:
        copy.release()


def _trial_schedule(copy: Fusion) -> None:
    schedule_pointwise(copy, PointwiseParams(lparams=LaunchParams(bdimx=THREADS_X)))


def _trial_schedule_reason(fusion: Fusion, copy: Fusion) -> str | None:
    """reshape_schedule_reason's trial: the 1-D schedule on `copy` (a clone of `fusion`)."""
    try:
        _trial_schedule(copy)
    except (ValueError, ScheduleError) as e:
        return f"the 1-D schedule cannot cross the reshapes: {e}"
    return _unscheduled_reason(fusion, copy)


def _unscheduled_reason(fusion: Fusion, copy: Fusion) -> str | None:
    """After the trial on `copy`: a local tensor with consumers that keeps a parallel axis
    outside its inlined loops, as the verdict names it, or None."""
    names = {t.short_name for t in fusion.tensors() if isinstance(t, TensorView)}

    def name(tv: TensorView) -> str:
        # The copy's caches are not in the user's fusion: name them by what they copy.
        d = tv.definition
        if tv.short_name in names or not isinstance(d, ex.LoadStoreOp):
            return tv.short_name
        if isinstance(d.inputs[0], TensorView) and d.inputs[0].short_name in names:
            return f"the cache of {d.inputs[0].short_name}"
        return tv.short_name

    for tv in copy.tensors():
        if (not isinstance(tv, TensorView) or tv in copy.inputs
                or tv.memory_type != MemoryType.Local or not consumers_of(tv)):
            continue
        outside = [i for i in tv.domain.loop[tv.compute_at_pos:]
                   if not i.is_broadcast and (i.parallel_type.is_thread_dim or i.parallel_type.is_block_dim)]
        if outside:
            readers = [c for c in consumers_of(tv) if c.short_name in names] or consumers_of(tv)
            return (f"the 1-D schedule cannot cross the reshapes: {name(tv)} is not inlined "
                    f"into {', '.join(c.short_name for c in readers)} (their loops differ: "
                    "reshaped and permuted axes flatten in different orders), so it would be "
                    "read at elements other threads computed")
    return None


def has_reduction(fusion: Fusion) -> bool:
    for e in fusion.exprs():
        if isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
            return True
        for o in e.outputs:
            if isinstance(o, TensorView) and any(i.is_reduction for i in o.domain.logical):
                return True
    return False


def concrete_last(tv: TensorView) -> IterDomain:
    return [i for i in tv.domain.logical if not i.is_reduction][-1]


def block_quantization_reference_reason(fusion: Fusion) -> str | None:
    """The block schedule splits the reference's last logical axis into blocks, so that
    axis must be every quantization's last (K) axis: the reference must be a quantized
    output (an output of another shape could put a different axis last)."""
    qs = [e for e in fusion.exprs() if isinstance(e, BlockQuantizationOp)]
    if not qs:
        return None
    if len({e.block_size for e in qs}) > 1:
        return "block quantizations of different block sizes"
    ref = find_reference(fusion)
    if ref is None or not any(ref is e.quantized for e in qs):
        return ("block quantization needs its quantized output to be the reference "
                f"(found {ref.short_name if ref is not None else 'none'})")
    ref_k = concrete_last(ref)
    for e in qs[1:]:
        other = e.quantized
        assert isinstance(other, TensorView)
        if other.ndim != ref.ndim or not same_scalar(concrete_last(other).extent, ref_k.extent):
            return "block quantizations of different shapes"
    return None


def non_terminal_block_quantize(fusion: Fusion) -> TensorView | None:
    for e in fusion.exprs():
        if isinstance(e, BlockQuantizationOp) and e.block_scales not in fusion.outputs:
            return e.block_scales
    return None
