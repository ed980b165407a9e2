"""The resize scheduler: fusions of slice, pad and cat with pointwise ops.

Follows nvFuser's ResizeScheduler (csrc/scheduler/resize.cpp) in what it accepts and
why it refuses, and in the shape of its schedule: the reference is the output with
the most logical dims; its innermost axis is split by the vectorization factor, the
rest flattened and split by 128 threads: [BIDx, TIDx(128), V].

This module holds the scheduler's verdicts; its parts are:

- resize_reference: the reference, and the slices and pads upstream of each output;
- resize_walk and resize_alignment: every tensor's alignment with the reference (per
  reference axis, the id that plays it and the Resizes between them), found edge by
  edge in a walk from the reference; resize_axes: such axes across reshapes;
- resize_exclusive and resize_recompute: the walk's conflicts (a tensor needed under
  two alignments), resolved by recomputing the tensor for one of its consumers;
  resize_components: parts that meet only at fusion inputs, aligned apart when their
  conflicts do not resolve otherwise;
- resize_heuristics: ResizeParams;
- resize_schedule: every tensor's loop domain built from its alignment, scheduled
  like the reference's. The reorder of the reference to the largest input's
  allocation order is not done (the fields are computed and printed).
"""

from __future__ import annotations

from engine.analysis.vectorize import vectorization_factor
from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain, Resize
from engine.ir.logical_map import frozen_fact, pairwise_logical_map
from engine.ir.scalar import shareable_constant
from engine.ir.tensorview import TensorView
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.id_classes import broadcast_groups, has_non_unique_broadcast
from engine.schedule.params import HeuristicParams
from engine.schedule.registry import register
from engine.schedule.resize_alignment import ConflictError, PairwiseMaps
from engine.schedule.resize_components import component_leads, parts_apart
from engine.schedule.resize_exclusive import make_resizes_exclusive, unmapped_output
from engine.schedule.resize_heuristics import ResizeParams, compute_resize_heuristics
from engine.schedule.resize_reference import reference_tensor, resize_between_outputs
from engine.schedule.resize_schedule import schedule_resize
from engine.schedule.resize_walk import AlignWalk, align
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.schedule.tools import has_reduction
from engine.schedule.transpose_groups import group_inputs_outputs_by_inner_dim
from engine.trace import Trace

# Bytes (read and written) of a view copied by a kernel that cost about what the launch of
# a kernel of its own does: an H200 moves 16 MiB in about 4 us (a model value).
VIEW_COPY_BYTES = 16 << 20


def _resize_ops(fusion: Fusion) -> list[ex.Expr]:
    return [e for e in fusion.exprs() if isinstance(e, (ex.SliceOp, ex.PadOp))]


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
        groups = broadcast_groups(fusion)
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
        inner = _inner_permute(fusion)
        if inner is not None:
            return inner
        return frozen_fact(fusion, "resize_alignment", _alignment_verdict)[0]

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        # Parts aligned apart share one kernel and one vector width, found over every
        # part's inputs and outputs (for the reference): refused where that is narrower
        # than a part's own, which a kernel of its own keeps, and where a part that only
        # views an input would be copied at a cost beyond a launch's (VIEW_COPY_BYTES).
        if not frozen_fact(fusion, "resize_alignment", _alignment_verdict)[1]:
            return None
        parts = parts_apart(fusion)
        for part in parts:
            n = info.numel(part.lead)
            if part.views_only and 2 * n * max(part.lead.dtype.bits // 8, 1) > VIEW_COPY_BYTES:
                return (f"parts aligned apart would copy {part.lead.short_name}, a view of an input, "
                        f"in the kernel ({n} elements; a no-kernel segment views it)")
        ref = reference_tensor(fusion)
        assert ref is not None
        whole = vectorization_factor(fusion, ref, info, break_point=max(ref.ndim - 1, 0)).factor
        for part in parts:
            lead = part.lead
            if whole >= 16 // max(lead.dtype.bits // 8, 1):
                continue  # a 16-byte vector of the lead's elements: no part's own is wider
            alone = vectorization_factor(fusion, lead, info, break_point=max(lead.ndim - 1, 0),
                                         exclude=part.others).factor
            if whole < alone:
                return (f"parts aligned apart would vectorize {lead.short_name}'s part by {whole} "
                        f"instead of {alone}")
        return None

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> ResizeParams:
        return compute_resize_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        assert isinstance(params, ResizeParams)
        schedule_resize(fusion, params, trace)


def _alignment_verdict(fusion: Fusion) -> tuple[str | None, bool]:
    """Why the resize scheduler cannot align `fusion` with its reference (None when it
    can), and whether its parts are then aligned apart (engine.schedule.resize_components)."""
    ref = reference_tensor(fusion)
    assert ref is not None
    walk = AlignWalk(fusion, ref, PairwiseMaps(), track_shared=False)
    try:
        unmapped = unmapped_output(fusion, ref, walk.run())
        if unmapped is None:
            return None, False
        conflict = unmapped
    except ConflictError as c:
        conflict = c
    # Recomputation is tried on a copy: a verdict never changes the fusion. It adds
    # tensors and rewires ops but never edits a domain or an op's attributes, so the
    # copy shares the domains and the attributes that hold only constants.
    domains = _domains(fusion) + _constant_attributes(fusion)
    copy, vals = fusion.clone(shared=domains)
    # The copy aligns as the fusion did, up to the same conflict: its first attempt.
    first = ConflictError(str(conflict), *(None if t is None else vals[t] for t in (  # type: ignore[misc]
        conflict.tensor, conflict.consumer, conflict.output)))
    try:
        try:
            make_resizes_exclusive(copy, vals[ref], first=(first, walk.translated(copy, vals)))  # type: ignore[arg-type]
            return None, False
        except ConflictError:
            # The schedule goes on from the same edits (see schedule_resize).
            component_leads(copy, vals[ref])  # type: ignore[arg-type]
            return None, True
    except ConflictError as c:
        return resize_between_outputs(fusion, ref) or str(c), False
    finally:
        copy.release(shared=domains)  # not read again (see Fusion.release)


def _inner_permute(fusion: Fusion) -> str | None:
    """Why a permute inside the fusion that moves its input's innermost axis refuses it."""
    for e in fusion.exprs():
        if not (isinstance(e, ex.LoadStoreOp) and e.is_permute):
            continue
        out = e.output
        assert isinstance(out, TensorView)
        root = [i for i in out.domain.root if not i.is_broadcast]
        logical = [i for i in out.domain.logical if not i.is_broadcast]
        if root and logical and root[-1] is not logical[-1]:
            return (f"Transpose-like patterns not supported: {out.short_name} permutes the "
                    "innermost axis")
    return None


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
    """The exprs' attribute dicts that hold only constants (ir.scalar.shareable_constant)."""
    return [e.attributes for e in fusion.all_exprs if e.attributes and shareable_constant(e.attributes)]


__all__ = ["ResizeParams", "ResizeScheduler", "align", "reference_tensor"]
