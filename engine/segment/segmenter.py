"""The segmenter: nvFuser's SegmentCandidateFinder, learned from, not copied.

1. The complete fusion is offered to every scheduler; if one accepts (and no segment_set
   or seed boundary forces a cut) it is one segment.
2. Otherwise: forwarding sets aside cheap chains from inputs and factories
   (forwarding.py); up-casts and squeezes with several uses are privatized (one copy per
   use) so that each consumer segment can recompute them; every remaining expr becomes
   a group.
3. Pre-merges: a cat with the pads that produce its inputs; up-cast/down-cast pairs;
   reductions with the same signature (vertically, or horizontally under a common producer).
4. Level-based pairwise merging of neighbours (Herrmann et al., as nvFuser does):
   levels are longest paths from the inputs; a group merges with a neighbour whose level
   differs by at most one, and only when no neighbouring merge of this round is that close.
5. A final pass merges producers with consumers (outputs may now be fused through).
6. Privatized copies that landed in one group are folded back; forwarded chains are
   replicated into each group that reads them.

Every merge is accepted only when a scheduler of the registry accepts the merged group,
built as a real Fusion at the example input sizes; every attempt is a trace event.

This module holds the finder's state and the order of its passes (`run`); the finder's
parts live beside it, one job each: the groups and the graph between them (group_graph.py),
the questions to the schedulers (acceptance.py), merge attempts and pre-merges
(merging.py), level-based and final merging (level_merge.py), privatized casts and
narrowed boundaries (narrowing.py), and the result (assemble.py).
"""

from __future__ import annotations

from typing import Any

from engine.analysis.view_chains import views_only_to_outputs
from engine.config import Options
from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.logical_map import DomainMaps
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.segment.acceptance import Acceptance, Asked
from engine.segment.assemble import Assembly
from engine.segment.boundaries import boundary_vals, check_layout_op_uses, input_views_before_reductions
from engine.segment.components import components, parts_in_order
from engine.segment.fold import fold_zero_factories
from engine.segment.forwarding import Forwarding, find_forwarding
from engine.segment.graph import SegmentedFusion
from engine.segment.group_graph import Group, GroupGraph
from engine.segment.level_merge import LevelMerge
from engine.segment.merging import Merging, is_segment_set
from engine.segment.narrowing import Narrowing
from engine.segment.refusals import Refusals
from engine.segment.sizes import Sizes
from engine.trace import Trace


def segment_fusion(
    fusion: Fusion,
    inputs: list[Any],
    options: Options | None = None,
    trace: Trace | None = None,
    refusals: Refusals | None = None,
) -> SegmentedFusion:
    """Split `fusion` into segments that schedulers accept at the sizes of `inputs`.

    Like nvFuser's segmenter, this works on the fusion it is given: it may add privatized
    casts (equivalent copies) and marks segment boundary tensors global. Pass a clone
    (`fusion.clone()[0]`, which keeps names) to leave a user's fusion untouched.
    `refusals` holds what earlier attempts to compile the fusion learned: schedulers
    refused for a group whose kernel failed to lower, and ops that must be segments of
    their own (see compile_fusion).
    """
    options = options or Options()
    check_layout_op_uses(fusion)
    finder = _Finder(fusion, Sizes(fusion, inputs), options, trace)
    finder.refusals = refusals or Refusals()
    try:
        return finder.run()
    finally:
        finder.release_trials()


class _Finder(GroupGraph, Acceptance, Merging, LevelMerge, Narrowing, Assembly):
    """One segmentation: its state, and the order of its passes (`run`). The parts it is made
    of, one module each, read and change this state."""

    def __init__(self, fusion: Fusion, sizes: Sizes, options: Options, trace: Trace | None) -> None:
        self.fusion = fusion
        self.sizes = sizes
        self.options = options
        self.trace = trace
        self.boundary, self.forced = boundary_vals(fusion, trace)
        self.cache: dict[frozenset[tuple[int, ...]], Asked] = {}
        # Non-constant scalars of each tensor's extents and each expr's attributes, for
        # referenced_symbols: segmenting never changes a domain or an attribute (only
        # operands, privatized copies and memory types), and every candidate group asks.
        self._symbols: dict[object, tuple[Scalar, ...]] = {}
        # Likewise each tensor's domain and ids (shareable_domains) and whether each expr's
        # attributes are constants (cut_fusion).
        self._domain_ids: dict[object, tuple[Any, ...]] = {}
        self._constant_attrs: dict[Expr, bool] = {}
        # Pairwise and logical maps of the cuts' edges, by domains (see pairwise_maps_frozen):
        # cuts that share the complete fusion's domains have the same maps for the same edges.
        self._domain_maps: DomainMaps = {}
        self.forwarding = Forwarding()
        self.privatized: dict[Expr, list[Expr]] = {}
        self._groups: list[Group] = []
        # Counts edits of the groups (see `groups`), which key the cached adjacency.
        self._generation = 0
        self._adjacency_cache: tuple[tuple[int, int], Any] | None = None
        self.input_groups: dict[Val, Group] = {}
        # Split-only reshapes of inputs kept apart from their readers (boundaries.py)
        self.input_views: dict[Val, str] = {}
        self.refusals = Refusals()
        # (fusion version, whether its exact classes keep every tensor's axes apart)
        self._apart: tuple[int, bool] | None = None
        # (fusion version, whether it has no free symbol): see _static
        self._static_at: tuple[int, bool] | None = None

    # ---- trace helpers -------------------------------------------------------------------
    def _event(self, kind: str, subject: str, message: str, **data: Any) -> None:
        if self.trace is not None:
            self.trace.event(kind, subject, message, **data)

    # ---- the passes ------------------------------------------------------------------------
    def run(self) -> SegmentedFusion:
        fusion = self.fusion
        fold_zero_factories(fusion, self.trace)
        exprs = fusion.exprs()
        self.pos = {e: k for k, e in enumerate(exprs)}
        hints = [e for e in exprs if is_segment_set(e)]
        if hints:
            self._event("segment", "fusion", "segment_set present: the fusion is segmented "
                        f"({', '.join(e.output.short_name for e in hints)})")
            # Segment_sets followed only by views of outputs (engine.preseg.views_of_outputs_apart):
            # each goes with its views, a segment with no kernel, and the rest is tried whole.
            if all(views_only_to_outputs(fusion, e.output) for e in hints) and not self.boundary:
                parts = components(exprs, cut_in=hints)
                if (len(parts) > 1 and parts_in_order(parts)
                        and not any(e.name in self.refusals.isolated for e in exprs)
                        and all(self._ask(p)[1] is not None for p in parts)):
                    self._event("segment", "fusion", f"{len(parts)} parts apart at segment_sets "
                                "followed by views only, each accepted whole: one segment each")
                    self.groups = [Group(p) for p in parts]
                    return self._finish()
        elif self.boundary:
            self._event("segment", "fusion", "tensors that must cross a segment boundary: "
                        + ", ".join(v.short_name for v in self.boundary) + ": segmenting")
        elif len(exprs) > 1 and any(e.name in self.refusals.isolated for e in exprs):
            self._event("segment", "fusion", "ops that failed to lower together are kept apart: segmenting")
        else:
            verdicts, first = self._ask(exprs)
            vs = [{"scheduler": str(v.scheduler), "accepted": v.accepted, "reason": v.reason} for v in verdicts]
            if first is not None:
                self._event("segment", "fusion", f"un-segmented: {first} accepts the complete fusion",
                            accepted=True, scheduler=str(first), verdicts=vs)
                self.groups = [Group(list(exprs))]
                return self._finish()
            self._event("segment", "fusion", "no scheduler accepts the complete fusion: segmenting",
                        accepted=False, scheduler=None, verdicts=vs)
            parts = components(exprs)
            if len(parts) > 1 and all(self._ask(p)[1] is not None for p in parts):
                self._event("segment", "fusion", f"{len(parts)} parts that share no tensor, each "
                            "accepted whole: one segment each")
                self.groups = [Group(p) for p in parts]
                return self._finish()

        self.input_views = input_views_before_reductions(fusion, self.trace)
        self.boundary.update(self.input_views)
        self.forwarding = find_forwarding(fusion, self.options.forwarding,
                                          {*self.boundary, *self.forced}, self.trace)
        self._privatize()
        exprs = fusion.exprs()
        self.pos = {e: k for k, e in enumerate(exprs)}
        excluded = self.forwarding.excluded
        for v in [*[i for i in fusion.inputs if isinstance(i, TensorView)], *self.forwarding.chains]:
            self.input_groups[v] = Group([], val=v)
        self.groups = [Group([e]) for e in exprs if e not in excluded]

        self._merge_cat_with_pads()
        self._merge_up_and_down_casts()
        self._combine_reductions()
        self._merge_regions()
        self._level_merge()
        self._final_merge()
        self._narrow_boundaries()
        self._sibling_merge()
        self._narrow_boundaries()
        self._absorb_input_views()
        self._revert_privatized()
        return self._finish()
