"""ExprEval: segments that run as ATen calls (torch), not as generated kernels.

nvFuser's ExprEvalScheduler accepts a fusion when every output is pointer arithmetic
on an input (an alias: the output's storage is the input's, reached through view-like
ops without compute), or when the fusion is a single expression that ATen evaluates
(MatmulOp, LinearOp, SDPA, ...). This engine has matmul, linear, the nvfp4 grouped matmul
(CutlassNvfp4GroupedMmaOp, run through torch by engine.nvfp4) and the ops of
engine.ir.aten_exprs (SDPA, scan, topk, argsort, scatter, index_put_accumulate,
grouped_mm, and a plain cast to fp4) in that set; the matmul scheduler delegates to this one. There are no heuristics (params None) and
`schedule` transforms nothing: the segment is evaluated, not lowered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.view_chains import views_only_to_outputs
from engine.ir import exprs as ex
from engine.ir.aten_exprs import ATEN_ONLY, aten_only
from engine.ir.base import Expr, Val
from engine.ir.iterdomain import Merge, transforms_between
from engine.ir.quant_exprs import CutlassNvfp4GroupedMmaOp
from engine.ir.tensorview import TensorView
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.registry import register

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.params import HeuristicParams
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace

# Single expressions that ATen evaluates.
ATEN_EXPRS: tuple[type[Expr], ...] = (ex.MatmulOp, ex.LinearOp, CutlassNvfp4GroupedMmaOp, *ATEN_ONLY)


def _alias_source(val: Val, fusion: Fusion) -> Val | None:
    """The fusion input whose storage `val` is a view of, or None when `val` computes.

    View-like ops (set, permute, squeeze, broadcast, expand, a slice with positive steps)
    only change sizes, strides and the offset, so their output aliases their input. A reshape aliases only a
    contiguous input: merging non-contiguous axes needs a copy (torch's view rule).
    A segment_set is a segmentation boundary, which a segment of views crosses as one.
    """
    cur = val
    while cur not in fusion.inputs:
        e = cur.definition
        if e is None:
            return None
        if isinstance(e, ex.LoadStoreOp):
            # A segment_set is a segment boundary (the copy is made); followed by views of
            # outputs only, in a segment of its own, it is the crossing of that boundary
            # (engine.preseg.views_of_outputs_apart).
            if e.kind != "Set" and not (e.kind == "SegmenterSet"
                                        and views_only_to_outputs(fusion, e.output)):
                return None
        elif isinstance(e, ex.ViewOp):
            src = e.input
            if not isinstance(src, TensorView) or src.domain.has_allocation or not all(
                c is not False for c in src.domain.contiguity
            ) or _merges_expansion(e) or (_has_merge(e) and _permuted(src, fusion)):
                return None
        elif isinstance(e, ex.SliceOp):
            # A slice with positive constant steps is a window of its input (torch's basic
            # slicing): sizes, strides and an offset.
            if not all(step.is_const and int(step.value) >= 1 for _, _, step in e.ranges):
                return None
        elif not isinstance(e, (ex.SqueezeOp, ex.BroadcastOp, ex.ExpandOp)):
            return None
        cur = e.input
    return cur


def _merges(out: TensorView) -> list[set[int]]:
    """For each merge between `out`'s root and logical domains, the ids of the root ids under
    it (the transforms in the order they were applied)."""
    under: dict[int, set[int]] = {id(r): {id(r)} for r in out.domain.root}
    found: list[set[int]] = []
    for t in transforms_between(out.domain.root, out.domain.logical):
        got: set[int] = set().union(*(under.get(id(i), set()) for i in t.inputs))
        for o in t.outputs:
            under[id(o)] = got
        if isinstance(t, Merge):
            found.append(got)
    return found


def _merges_expansion(e: ex.ViewOp) -> bool:
    """Whether the reshape merges an expanded broadcast axis of its input with another axis
    (GQA's repeat_kv: [B, Hkv, n_rep (expanded), S, D] to [B, Hkv * n_rep, S, D]): the
    repeated values must be written out, a copy (torch's reshape makes one), not a view."""
    out = e.output
    if not isinstance(out, TensorView) or not out.domain.has_root:
        return False
    ins = [i for i in e.input.domain.logical if not i.is_reduction]
    root = list(out.domain.root)
    if len(ins) != len(root):
        return any(i.has_expanded_extent for i in ins)
    expanded = {id(r) for i, r in zip(ins, root) if i.has_expanded_extent}
    return bool(expanded) and any(roots & expanded for roots in _merges(out))


def _has_merge(e: ex.ViewOp) -> bool:
    out = e.output
    return isinstance(out, TensorView) and out.domain.has_root and bool(_merges(out))


def _permuted(tv: Val, fusion: Fusion) -> bool:
    """Whether a permute lies between `tv` and the fusion input it views: its memory order
    is then not its logical order, and a reshape merging its axes copies."""
    cur = tv
    while cur not in fusion.inputs:
        e = cur.definition
        if e is None or not e.inputs:
            return False
        if isinstance(e, ex.LoadStoreOp) and e.is_permute:
            return True
        cur = e.inputs[0]
    return False


def all_outputs_alias_inputs(fusion: Fusion) -> bool:
    outs = [o for o in fusion.outputs if isinstance(o, TensorView)]
    return bool(outs) and all(_alias_source(o, fusion) is not None for o in outs)


@register
class ExprEvalScheduler(Scheduler):
    type = SchedulerType.expr_eval

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        if all_outputs_alias_inputs(fusion):
            return None
        exprs = fusion.exprs()
        if len(exprs) != 1:
            return "Fusion must contain only a single expression."
        if isinstance(exprs[0], ATEN_EXPRS) or aten_only(exprs[0]):
            return None
        # nvFuser's message, which names only its first four ATen ops.
        return (
            "Fusion must contain only a single expression of type "
            "MatmulOp/LinearOp/SdpaFwdOp/SdpaBwdOp"
        )

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> HeuristicParams | None:
        if trace is not None:
            trace.event("heuristic", "expr_eval", "no heuristics: the segment is evaluated by ATen")
        return None

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        # Nothing to transform: the outputs are computed (or aliased) by torch at run time.
        if trace is not None:
            trace.event("transform", "expr_eval", "no transforms: outputs are evaluated by ATen")
