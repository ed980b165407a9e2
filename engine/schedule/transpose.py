"""The transpose scheduler: two groups of inputs/outputs whose innermost dims differ,
moved through 32x32 shared-memory tiles.

Follows nvFuser's non-TMA transpose scheduler (csrc/scheduler/transpose*.cpp). This
module holds its verdicts; its parts are:

- transpose_groups (nvFuser's TransposeDomainMap::groupInputsOutputsByInnerDim): every
  fusion input (with uses) and output is put in the group of its innermost allocation
  dim. Two innermost dims are "the same" when they are linked through the fusion by
  exact (non-broadcast) producer-consumer maps, permutes, resizes and the innermost path
  of a reshape (a split's inner output, a merge's inner input). Outputs are grouped
  first, then inputs; groups are sorted by size, largest first. reference1 is the
  largest tensor of group 1, reference2 of group 2.
- transpose_heuristics: TransposeParams, the tile size, each group's vectorization
  factor, the threads per block.
- transpose_schedule: tiles made on reference1 at the positions of both innermost
  dims and propagated to the whole fusion; each group merges the tile in its own order
  ([Unroll, TIDx, Vectorize]), and group 2's side of the tile, in shared memory, is
  where the two thread layouts meet.

Simplifications, each documented where it applies: the virtual inner-most dims
that nvFuser builds for small transpose dims (split_before_tiling,
dims_merged_with_1/2) are not built (a small inner dim is tiled as it is and the
tile is predicated); vectorization factors are computed per group (see
transpose_heuristics): engine.analysis.vectorize answers for one reference's
innermost region, while each transpose group needs its own inner dim's factor.
"""

from __future__ import annotations

from engine.ir import exprs as ex
from engine.ir.fusion import Fusion
from engine.ir.logical_map import consumers_of, producers_of
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.id_classes import has_non_unique_broadcast
from engine.schedule.params import HeuristicParams
from engine.schedule.registry import register
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.schedule.tools import has_reduction
from engine.schedule.transpose_groups import (
    find_reference_for,
    group_inputs_outputs_by_inner_dim,
    inner_dim_map,
    innermost_alloc_id,
    io_tensors,
    position_in,
    transpose_layout,
)
from engine.schedule.transpose_heuristics import (
    DEFAULT_TILE_SIZE,
    TransposeParams,
    compute_transpose_heuristics,
)
from engine.schedule.transpose_schedule import schedule_transpose
from engine.trace import Trace


def _crosses_view_p2c(reference: TensorView) -> bool:
    """Whether propagating from `reference` goes producer-to-consumer into a reshape.

    nvFuser's TransposeViewPropagator dry run; here it also matters because this
    engine's propagation cannot carry a loop schedule from a reshape's input onto
    its output.
    """
    seen = {reference}
    queue = [reference]
    while queue:
        src = queue.pop(0)
        for c in consumers_of(src):
            if c in seen:
                continue
            if isinstance(c.definition, ex.ViewOp):
                return True
            seen.add(c)
            queue.append(c)
        for p in producers_of(src):
            if p not in seen:
                seen.add(p)
                queue.append(p)
    return False


@register
class TransposeScheduler(Scheduler):
    type = SchedulerType.transpose

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        for tv in fusion.tensors():
            if tv.dtype.bits % 8:
                return "Does not support sub-byte data types."
        for e in fusion.exprs():
            if isinstance(e, (ex.SelectOp, ex.IndexSelectOp, ex.GatherOp)):
                inp = e.inputs[0]
                assert isinstance(inp, TensorView)
                ids = [i for i in inp.domain.logical if not i.is_reduction]
                dim = getattr(e, "dim", None)
                if dim is not None and innermost_alloc_id(inp) is ids[dim]:
                    name = type(e).__name__
                    return (f"{name} on inner dim is not supported by transpose scheduler yet."
                            "In transpose scheduler, we want to leave the select dim alone, "
                            "instead of creating a tile for it.")
        if has_reduction(fusion):
            return "no support for reduction ops"
        why = tools.memory_promotion_reason(fusion)
        if why is not None:
            return why
        if has_non_unique_broadcast(fusion):
            return "Broadcasting dimension might be broadcasting to multiple sizes."
        groups = group_inputs_outputs_by_inner_dim(fusion)
        if len(groups) < 2:
            return "cannot find two mismatching inner most dimensions"
        ref1, ref2 = find_reference_for(fusion, groups[0]), find_reference_for(fusion, groups[1])
        if ref1 is None or ref2 is None:
            return "cannot find two mismatching inner most dimensions"
        inner2 = innermost_alloc_id(ref2)
        if inner2 is None or position_in(ref1, inner2, inner_dim_map(fusion)) < 0:
            return "cannot find two mismatching inner most dimensions"
        return None

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        _, ref1, _, pos1, pos2 = transpose_layout(fusion)
        if pos1 < 0 or pos2 < 0:
            return ("Transpose scheduler requires exact mapping on inner most dimension "
                    "on reference tensor.")
        shape = info.sizes(ref1)
        n_elems = 1
        for s in shape:
            n_elems *= s
        tile_elems = DEFAULT_TILE_SIZE * DEFAULT_TILE_SIZE
        if info.device.sm_count * tile_elems > n_elems:
            return "Transpose scheduler does not perform well on small problem sizes."
        inner1, inner2 = shape[pos1], shape[pos2]
        if inner1 * inner2 < tile_elems:
            inner = inner1 * inner2
            for k in range(pos2 + 1, pos1):
                inner *= shape[k]
            if inner < tile_elems:
                return ("Inner transpose of small dimensions should be scheduled by the "
                        "pointwise scheduler because it provides better memory coalescing")
        if n_elems // inner1 < DEFAULT_TILE_SIZE or n_elems // inner2 < DEFAULT_TILE_SIZE:
            return ("Splitting of inner most dim for the creation of virtual inner most dim "
                    "is disabled due to indexing bug, skipping this case at runtime for now"
                    "See: https://github.com/csarofeen/pytorch/issues/1964")
        if any(isinstance(e, ex.ViewOp) for e in fusion.exprs()) and _crosses_view_p2c(ref1):
            return "transpose scheduler could potentially trigger incoherent transform propagation"
        return None

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> TransposeParams:
        return compute_transpose_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        assert isinstance(params, TransposeParams)
        schedule_transpose(fusion, params, trace)


__all__ = ["TransposeParams", "TransposeScheduler", "group_inputs_outputs_by_inner_dim",
           "has_non_unique_broadcast",
           "find_reference_for", "innermost_alloc_id", "inner_dim_map", "io_tensors"]
