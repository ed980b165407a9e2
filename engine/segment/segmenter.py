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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.analysis.logical_map import DomainMaps, pairwise_maps_frozen
from engine.config import Options
from engine.errors import NoSchedulerError, ScheduleError
from engine.ir import exprs as ex
from engine.ir.base import Expr, FusionGuard, Val
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.ops.arith import cast
from engine.ops.shape import squeeze
from engine.runtime.device import DeviceProperties, current
from engine.schedule import registry, tools
from engine.schedule.base import PRIORITY, SchedulerType, Verdict
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.segment.boundaries import boundary_vals, check_layout_op_uses
from engine.segment.components import components
from engine.segment.fold import fold_zero_factories
from engine.segment.forwarding import Forwarding, find_forwarding
from engine.segment.graph import (
    SegmentedEdge,
    SegmentedFusion,
    SegmentedGroup,
    Sizes,
    cut_fusion,
    mark_global,
    referenced_symbols,
    shareable_domains,
    unshare,
)
from engine.segment.refusals import Refusals
from engine.segment.regions import is_cut_point, regions
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


# ---- groups while segmenting ---------------------------------------------------------------

@dataclass
class _Asked:
    """A candidate group cut out as its own Fusion, and what the schedulers said of it:
    verdicts in priority order, compile-time reasons by scheduler (those that did not
    crash), and the complete fusion's version when it was cut."""

    sub: Fusion
    val_map: dict[Val, Val]  # the complete fusion's vals -> sub's
    # The cut's input values and device, as SchedulerRuntimeInfo takes them: bound only
    # for a scheduler whose compile-time checks pass (most cuts are refused before).
    args: list[Any]
    device: DeviceProperties
    version: int
    verdicts: list[Verdict] = field(default_factory=list)
    reasons: dict[SchedulerType, str | None] = field(default_factory=dict)
    # Domains the cut shares with the complete fusion (by id) and the copy's memo, which
    # unshare continues before the cut becomes a segment (see graph.shareable_domains).
    shared: dict[int, Any] = field(default_factory=dict)
    memo: dict[int, Any] = field(default_factory=dict)
    _info: SchedulerRuntimeInfo | None = None

    def info(self) -> SchedulerRuntimeInfo:
        if self._info is None:
            self._info = SchedulerRuntimeInfo(self.sub, self.args, self.device)
        return self._info


class _Group:
    """A group under construction; `val` is set for the auxiliary group of an input."""

    def __init__(self, exprs: list[Expr], val: Val | None = None) -> None:
        self.exprs = exprs
        self.val = val
        self.level = 0
        self.merged = False
        self.merge_with: _Group | None = None

    @property
    def is_input(self) -> bool:
        return self.val is not None

    def label(self) -> str:
        if self.val is not None:
            return f"input {getattr(self.val, 'short_name', '?')}"
        return "g{" + ", ".join(str(n) for n in sorted(e.name for e in self.exprs)) + "}"


def _no_free_symbols(fusion: Fusion) -> bool:
    for v in fusion.all_vals:
        if isinstance(v, Scalar) and v.value is None:
            return False
        if isinstance(v, TensorView):
            d = v.domain
            for i in (*d.maybe_root, *d.logical, *d.loop, *(d.allocation or ())):
                if i.extent.value is None or (i.expanded_extent is not None and i.expanded_extent.value is None):
                    return False
    return True


def _is_segment_set(e: Expr) -> bool:
    return isinstance(e, ex.LoadStoreOp) and e.kind == "SegmenterSet"


def _is_cast(e: Expr) -> bool:
    return isinstance(e, ex.UnaryOp) and e.op == "cast"


def _is_upcast(e: Expr) -> bool:
    if not _is_cast(e):
        return False
    a, b = e.input.dtype, e.output.dtype
    return a.is_float and b.is_float and b.bits > a.bits


def _is_downcast(e: Expr) -> bool:
    if not _is_cast(e):
        return False
    a, b = e.input.dtype, e.output.dtype
    return a.is_float and b.is_float and b.bits < a.bits


def _reduction_signature(g: _Group) -> tuple[int, tuple[int, ...]] | None:
    """nvFuser's ReductionSignature: rank of the reduction output's domain and the
    positions of its reduced axes."""
    sig = None
    for e in g.exprs:
        if isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
            out = e.outputs[0]
            dom = out.domain.logical
            sig = (len(dom), tuple(k for k, i in enumerate(dom) if i.is_reduction))
    return sig


def _key(core: Sequence[Expr]) -> frozenset[tuple[int, ...]]:
    """A group's identity for its verdicts: its exprs with what each reads, since rewiring
    an expr (privatized casts folded back) changes the group a verdict was made for."""
    return frozenset((id(e), *(id(v) for v in e.inputs)) for e in core)


class _Finder:
    def __init__(self, fusion: Fusion, sizes: Sizes, options: Options, trace: Trace | None) -> None:
        self.fusion = fusion
        self.sizes = sizes
        self.options = options
        self.trace = trace
        self.boundary, self.forced = boundary_vals(fusion, trace)
        self.cache: dict[frozenset[tuple[int, ...]], _Asked] = {}
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
        self._groups: list[_Group] = []
        # Counts edits of the groups (see `groups`), which key the cached adjacency.
        self._generation = 0
        self._adjacency_cache: tuple[tuple[int, int], Any] | None = None
        self.input_groups: dict[Val, _Group] = {}
        self.refusals = Refusals()
        # (fusion version, whether its exact classes keep every tensor's axes apart)
        self._apart: tuple[int, bool] | None = None
        # (fusion version, whether it has no free symbol): see _static
        self._static_at: tuple[int, bool] | None = None

    def release_trials(self) -> None:
        """Free the candidate fusions now that segmentation is over: the compile pauses the
        cycle collector, whose first pass after it would otherwise walk every one of these
        (cyclic) graphs; nothing reads them any more (verdicts and trace events are text)."""
        for asked in self.cache.values():
            asked.sub.release(shared=asked.shared.values())
        self.cache.clear()

    # ---- trace helpers -------------------------------------------------------------------
    def _event(self, kind: str, subject: str, message: str, **data: Any) -> None:
        if self.trace is not None:
            self.trace.event(kind, subject, message, **data)

    # ---- asking the registry ---------------------------------------------------------------
    def _group_io(self, core: Sequence[Expr]) -> tuple[list[Expr], list[TensorView], list[Val]]:
        """Exprs of the group's Fusion (core plus replicated forwarded chains), its tensor
        inputs and its outputs."""
        core_set = set(core)
        read: dict[Val, None] = {}
        for e in core:
            for v in e.inputs:
                read[v] = None
        eff_set = core_set | set(self.forwarding.exprs_for(list(read)))
        eff = sorted(eff_set, key=self.pos.__getitem__)
        produced = {v for e in eff for v in e.outputs}
        inputs: dict[TensorView, None] = {}
        for e in eff:
            for v in e.inputs:
                if isinstance(v, TensorView) and v not in produced:
                    inputs[v] = None
        outs = set(self.fusion.outputs)
        outputs: list[Val] = []
        for e in core:
            for v in e.outputs:
                if v in outs or v in self.forced or any(u not in core_set for u in self.fusion.uses_of(v)):
                    outputs.append(v)
        ins = sorted(inputs, key=lambda t: t.name)
        return eff, ins, sorted(dict.fromkeys(outputs), key=lambda t: t.name)

    def _ask(self, core: Sequence[Expr], every: bool = False) -> tuple[list[Verdict], SchedulerType | None]:
        """The schedulers' verdicts on the group of `core` exprs, as its own Fusion, in priority
        order up to the one that takes it (nvFuser's tryMerge stops there too); with `every`,
        all of them, as a final segment shows them."""
        key = _key(core)
        asked = self.cache.get(key)
        if asked is None:
            asked = self.cache[key] = self._cut(core)
        verdicts = asked.verdicts
        # A forced scheduler may come after the first that accepts.
        every = every or self.options.force_scheduler is not None
        names = frozenset(e.name for e in core)
        with pairwise_maps_frozen(asked.sub, self._domain_maps if asked.shared else None):
            for t in PRIORITY[len(verdicts):]:
                if not every and self._choose(verdicts) is not None:
                    break
                failed = self.refusals.why_refused(names, str(t))
                if failed is not None:
                    verdicts.append(Verdict(t, False, f"its kernel for this group failed to lower: {failed}"))
                    continue
                try:
                    reason = registry.compile_time_reason(t, asked.sub)
                    asked.reasons[t] = reason
                except Exception as e:  # a scheduler that crashes refuses, and says why
                    verdicts.append(Verdict(t, False, f"check failed: {type(e).__name__}: {e}"))
                    continue
                # Sizes are bound (outside the scheduler's check, as when the cut was made
                # with them) only for a scheduler whose compile-time checks pass.
                info = asked.info() if reason is None else None
                try:
                    verdicts.append(registry.verdict(t, asked.sub, info, reason))
                except Exception as e:  # a scheduler that crashes refuses, and says why
                    verdicts.append(Verdict(t, False, f"check failed: {type(e).__name__}: {e}"))
        return list(verdicts), self._choose(verdicts)

    def _cut(self, core: Sequence[Expr]) -> _Asked:
        eff, ins, outs = self._group_io(core)
        scalars = referenced_symbols(eff, ins, self._symbols)
        # The verdicts only read the cut: in a fusion without free symbols it shares the
        # domains of the tensors it computes instead of copying them (most of a copy).
        shared = shareable_domains(eff, ins, self._domain_ids) if self._static() else {}
        memo = dict(shared)
        sub, val_map = cut_fusion(self.fusion, eff, [*ins, *scalars], outs, memo, self._constant_attrs)
        if not tools.has_reshape_history(sub) and self._exact_classes_apart():
            registry.note_no_self_mapping(sub)
        args = [self.sizes.tensor(t) for t in ins] + [self.sizes.value(s) for s in scalars]
        return _Asked(sub, val_map, args, current(self.options.device_model),
                      self.fusion.version, shared=shared, memo=memo if shared else {})

    def _static(self) -> bool:
        """Whether the fusion, as it is now, has no free symbol: no symbolic extent and no
        scalar input. Then a cut that shares domains (whose extents are the complete
        fusion's) and copies its inputs' (whose extents are copies) compares and evaluates
        every extent by its value, as one copy would."""
        version = self.fusion.version
        if self._static_at is None or self._static_at[0] != version:
            self._static_at = (version, _no_free_symbols(self.fusion))
        return self._static_at[1]

    def _exact_classes_apart(self) -> bool:
        """Whether the fusion, as it is now, has no two axes of one tensor in one exact
        class: then no cut of it has, and a cut without reshapes has no self mapping."""
        version = self.fusion.version
        if self._apart is None or self._apart[0] != version:
            self._apart = (version, tools.exact_self_mapping_reason(self.fusion) is None)
        return self._apart[1]

    def _take_cut(self, core: Sequence[Expr], boundary: set[Val]) -> tuple[Fusion, dict[Val, Val]] | None:
        """The cut made while segmenting of the group of `core`, for its segment, when cutting
        again would copy the same fusion: made from the fusion as it is now, with the names
        it has now (verdicts never change a cut). Boundary tensors have become global since
        (mark_global), in the cut too. It is no longer a trial to release."""
        key = _key(core)
        asked = self.cache.get(key)
        if (asked is None or asked.version != self.fusion.version
                or asked.sub._counters != self.fusion._counters):
            return None
        del self.cache[key]
        if asked.shared:
            unshare(asked.sub, asked.memo, asked.shared)  # it is about to be scheduled
        mark_global([c for v, c in asked.val_map.items() if v in boundary])  # type: ignore[misc]
        return asked.sub, asked.val_map

    def _known_reasons(self, core: Sequence[Expr]) -> dict[SchedulerType, str | None] | None:
        """The compile-time reasons found for the group of `core`, when its cut was made
        from the fusion as it is now (so the segment's own cut, made the same way, is the
        same fusion) and every scheduler was asked without crashing; else None."""
        asked = self.cache.get(_key(core))
        if asked is None or asked.version != self.fusion.version or len(asked.reasons) != len(PRIORITY):
            return None
        return dict(asked.reasons)

    def _choose(self, verdicts: list[Verdict]) -> SchedulerType | None:
        forced = self.options.force_scheduler
        if forced is not None:
            for v in verdicts:
                if str(v.scheduler) == str(forced) and v.accepted:
                    return v.scheduler
        return next((v.scheduler for v in verdicts if v.accepted), None)

    # ---- structure -------------------------------------------------------------------------
    def _producer_group(self) -> dict[Val, _Group]:
        m: dict[Val, _Group] = dict(self.input_groups)
        for g in self.groups:
            for e in g.exprs:
                for v in e.outputs:
                    m[v] = g
        return m

    def _edges(self) -> list[tuple[_Group, _Group, Val]]:
        prod = self._producer_group()
        out: dict[tuple[int, int, int], tuple[_Group, _Group, Val]] = {}
        for g in self.groups:
            for e in g.exprs:
                for v in e.inputs:
                    if not isinstance(v, TensorView):
                        continue
                    p = prod.get(v)
                    if p is None or p is g:
                        continue
                    out.setdefault((id(p), id(g), id(v)), (p, g, v))
        return list(out.values())

    @property
    def groups(self) -> list[_Group]:
        return self._groups

    @groups.setter
    def groups(self, groups: list[_Group]) -> None:
        self._groups = groups
        self._groups_changed()

    def _groups_changed(self) -> None:
        """Every edit of the groups (the list, or a group's exprs) comes through here."""
        self._generation += 1

    def _adjacency(self) -> tuple[dict[_Group, list[tuple[_Group, Val]]], dict[_Group, list[tuple[_Group, Val]]]]:
        """Producer and consumer groups of every group (shared: callers only read them),
        kept while neither the groups nor the fusion change: every merge attempt asks."""
        key = (self._generation, self.fusion.version)
        if self._adjacency_cache is None or self._adjacency_cache[0] != key:
            self._adjacency_cache = (key, self._fresh_adjacency())
        return self._adjacency_cache[1]

    def _fresh_adjacency(self) -> tuple[dict[_Group, list[tuple[_Group, Val]]],
                                        dict[_Group, list[tuple[_Group, Val]]]]:
        producers: dict[_Group, list[tuple[_Group, Val]]] = {g: [] for g in self.groups}
        consumers: dict[_Group, list[tuple[_Group, Val]]] = {g: [] for g in [*self.groups, *self.input_groups.values()]}
        for p, c, v in self._edges():
            producers[c].append((p, v))
            consumers[p].append((c, v))
        return producers, consumers

    def _upstream(self, producers: dict[_Group, list[tuple[_Group, Val]]]) -> dict[_Group, set[_Group]]:
        """All groups each group depends on (transitively), input groups excluded."""
        memo: dict[_Group, set[_Group]] = {}
        for g in self._topo(producers):
            s: set[_Group] = set()
            for p, _ in producers[g]:
                if not p.is_input:
                    s.add(p)
                    s |= memo[p]
            memo[g] = s
        return memo

    def _topo(self, producers: dict[_Group, list[tuple[_Group, Val]]]) -> list[_Group]:
        order: list[_Group] = []
        state: dict[_Group, int] = {}
        for root in sorted(self.groups, key=self._gpos):
            stack = [(root, 0)]
            while stack:
                g, k = stack.pop()
                if k == 0:
                    if state.get(g) == 2:
                        continue
                    state[g] = 1
                preds = [p for p, _ in producers[g] if not p.is_input]
                if k < len(preds):
                    stack.append((g, k + 1))
                    p = preds[k]
                    if state.get(p) is None:
                        stack.append((p, 0))
                    elif state.get(p) == 1:
                        raise ScheduleError(f"segment graph has a cycle through {g.label()}")
                else:
                    if state.get(g) != 2:
                        state[g] = 2
                        order.append(g)
        return order

    def _gpos(self, g: _Group) -> int:
        return min((self.pos[e] for e in g.exprs), default=-1)

    # ---- merging ---------------------------------------------------------------------------
    def _structural_reason(self, groups: Sequence[_Group]) -> str | None:
        exprs = [e for g in groups for e in g.exprs]
        if len(exprs) > 1:
            isolated = self.refusals.isolated
            why = next((isolated[e.name] for e in exprs if e.name in isolated), None)
            if why is not None:
                return why
        inside = set(exprs)
        for v, why in self.boundary.items():
            if v.definition in inside and any(u in inside for u in self.fusion.uses_of(v)):
                return why
        for e in exprs:
            if _is_segment_set(e) and any(u in inside for u in self.fusion.uses_of(e.output)):
                return (f"segment_set producing {e.output.short_name} is a segment boundary: "
                        "its output is read inside the merged group")
        # A merge must not create a cycle: no path may leave the merged groups and return.
        members = set(groups)
        _, consumers = self._adjacency()
        frontier = [c for g in groups for c, _ in consumers[g] if c not in members]
        seen: set[_Group] = set()
        while frontier:
            c = frontier.pop()
            if c in seen:
                continue
            seen.add(c)
            for d, _ in consumers.get(c, []):
                if d in members:
                    return f"merging would create a cycle through {c.label()}"
                frontier.append(d)
        return None

    def _try(self, groups: Sequence[_Group], phase: str) -> SchedulerType | None:
        """Ask whether `groups` merged can be scheduled; record the attempt."""
        subject = "+".join(g.label() for g in groups)
        data: dict[str, Any] = {"phase": phase, "groups": [sorted(e.name for e in g.exprs) for g in groups]}
        reason = self._structural_reason(groups)
        if reason is not None:
            self._event("merge", subject, f"{phase}: not merged: {reason}", accepted=False,
                        scheduler=None, reason=reason, verdicts=[], **data)
            return None
        core = sorted({e for g in groups for e in g.exprs}, key=self.pos.__getitem__)
        verdicts, first = self._ask(core)
        vs = [{"scheduler": str(v.scheduler), "accepted": v.accepted, "reason": v.reason} for v in verdicts]
        if first is not None:
            msg = f"{phase}: merged, {first} accepts the merged group"
        else:
            msg = f"{phase}: not merged, no scheduler accepts the merged group"
        self._event("merge", subject, msg, accepted=first is not None,
                    scheduler=str(first) if first is not None else None, reason="", verdicts=vs, **data)
        return first

    def _merge(self, groups: Sequence[_Group]) -> _Group:
        exprs = sorted({e for g in groups for e in g.exprs}, key=self.pos.__getitem__)
        joined = _Group(exprs)
        gone = set(groups)
        self.groups = sorted([g for g in self.groups if g not in gone] + [joined], key=self._gpos)
        return joined

    # ---- the passes ------------------------------------------------------------------------
    def run(self) -> SegmentedFusion:
        fusion = self.fusion
        fold_zero_factories(fusion, self.trace)
        exprs = fusion.exprs()
        self.pos = {e: k for k, e in enumerate(exprs)}
        hints = [e for e in exprs if _is_segment_set(e)]
        if hints:
            self._event("segment", "fusion", "segment_set present: the fusion is segmented "
                        f"({', '.join(e.output.short_name for e in hints)})")
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
                self.groups = [_Group(list(exprs))]
                return self._finish()
            self._event("segment", "fusion", "no scheduler accepts the complete fusion: segmenting",
                        accepted=False, scheduler=None, verdicts=vs)
            parts = components(exprs)
            if len(parts) > 1 and all(self._ask(p)[1] is not None for p in parts):
                self._event("segment", "fusion", f"{len(parts)} parts that share no tensor, each "
                            "accepted whole: one segment each")
                self.groups = [_Group(p) for p in parts]
                return self._finish()

        self.forwarding = find_forwarding(fusion, self.options.forwarding,
                                          {*self.boundary, *self.forced}, self.trace)
        self._privatize()
        exprs = fusion.exprs()
        self.pos = {e: k for k, e in enumerate(exprs)}
        excluded = self.forwarding.excluded
        for v in [*[i for i in fusion.inputs if isinstance(i, TensorView)], *self.forwarding.chains]:
            self.input_groups[v] = _Group([], val=v)
        self.groups = [_Group([e]) for e in exprs if e not in excluded]

        self._merge_cat_with_pads()
        self._merge_up_and_down_casts()
        self._combine_reductions()
        self._merge_regions()
        self._level_merge()
        self._final_merge()
        self._narrow_boundaries()
        self._revert_privatized()
        return self._finish()

    def _privatize(self) -> None:
        """One copy of an up-cast or squeeze per use, so that a segment boundary after it
        passes the narrow tensor (nvFuser's privatizeUpcast)."""
        excluded = self.forwarding.excluded
        outs = set(self.fusion.outputs)

        for e in self.fusion.exprs():
            if e in excluded or not (_is_upcast(e) or isinstance(e, ex.SqueezeOp)):
                continue
            out = e.output
            uses = self.fusion.uses_of(out)
            if len(uses) < 2 or out in outs or out in self.boundary or out in self.forced:
                continue
            clones = []
            with FusionGuard(self.fusion):
                for use in uses[1:]:
                    if isinstance(e, ex.SqueezeOp):
                        new = squeeze(e.input, [k for k, f in enumerate(e.flags) if f], squeeze_expanded=True)
                    else:
                        new = cast(e.input, out.dtype)
                    self.fusion.replace_input_of(use, out, new)
                    clones.append(new.definition)
            self.privatized[e] = clones
            self._event("privatize", out.short_name,
                        f"{type(e).__name__} producing {out.short_name} copied once per use "
                        f"({', '.join(c.output.short_name for c in clones)})",
                        copies=[c.output.short_name for c in clones])

    def _merge_cat_with_pads(self) -> None:
        """A cat reads the pads of its inputs in the same kernel (nvFuser's resize rule)."""
        for cat_group in list(self.groups):
            if cat_group not in self.groups:
                continue
            cats = [e for e in cat_group.exprs if isinstance(e, ex.CatOp)]
            if not cats:
                continue
            prod = self._producer_group()
            pads: list[_Group] = []
            for c in cats:
                for v in c.inputs:
                    g = prod.get(v)
                    if g is not None and not g.is_input and g is not cat_group and isinstance(v.definition, ex.PadOp):
                        if g not in pads:
                            pads.append(g)
            if pads and self._try([cat_group, *pads], "cat with its pads") is not None:
                self._merge([cat_group, *pads])

    def _merge_up_and_down_casts(self) -> None:
        """An up-cast and the down-cast that reads it (or the reverse) go together, so that
        a boundary never passes the wide tensor between them."""
        changed = True
        while changed:
            changed = False
            _, consumers = self._adjacency()
            for g in list(self.groups):
                if not (len(g.exprs) == 1 and _is_cast(g.exprs[0])):
                    continue
                first = g.exprs[0]
                for c, _ in consumers[g]:
                    if len(c.exprs) != 1 or not _is_cast(c.exprs[0]):
                        continue
                    second = c.exprs[0]
                    if not ((_is_upcast(first) and _is_downcast(second))
                            or (_is_downcast(first) and _is_upcast(second))):
                        continue
                    if self._try([g, c], "up-cast with down-cast") is not None:
                        self._merge([g, c])
                        changed = True
                        break
                if changed:
                    break

    def _merge_regions(self) -> None:
        """Each region between the ops no kernel computes (engine.segment.regions) is tried
        whole once, before pairwise merging; the complete fusion was tried already."""
        cut = [g for g in self.groups if len(g.exprs) == 1 and is_cut_point(g.exprs[0], self.fusion.inputs)]
        if not cut:
            return
        edges = [(p, c) for p, c, _ in self._edges() if not p.is_input]
        for piece in regions(self.groups, edges, lambda g: g in cut):
            if self._try(piece, "region between ops no kernel computes") is not None:
                self._merge(piece)

    def _combine_reductions(self) -> None:
        """Reductions with the same signature merge vertically (with every group between
        them) or horizontally (siblings under a common producer), nvFuser's
        CombineReductions; run only when two groups share a signature."""
        def signatures() -> dict[_Group, tuple[int, tuple[int, ...]]]:
            return {g: s for g in self.groups if (s := _reduction_signature(g)) is not None}

        sigs = signatures()
        if len(set(sigs.values())) == len(sigs):
            return
        merged = True
        while merged:
            merged = False
            sigs = signatures()
            red = sorted(sigs, key=self._gpos)
            producers, _ = self._adjacency()
            up = self._upstream(producers)
            for i, a in enumerate(red):
                for b in red[i + 1:]:
                    if sigs[a] != sigs[b]:
                        continue
                    if a in up[b] or b in up[a]:
                        p, c = (a, b) if a in up[b] else (b, a)
                        between = [g for g in self.groups if p in up[g] and g in up[c]]
                        members = [p, *between, c]
                        if any(g in sigs and sigs[g] != sigs[a] for g in members):
                            continue
                        if any(v in self.fusion.outputs for g in members for q, v in producers[g] if q in members):
                            continue
                        phase = "vertical reduction merge"
                    else:
                        if not (up[a] & up[b]):
                            continue
                        members = [a, b]
                        phase = "horizontal reduction merge"
                    if self._try(members, phase) is not None:
                        self._merge(members)
                        merged = True
                        break
                if merged:
                    break

    def _levels(self, producers: dict[_Group, list[tuple[_Group, Val]]]) -> None:
        for g in self.input_groups.values():
            g.level = 0
        for g in self._topo(producers):
            g.level = max((p.level + 1 for p, _ in producers[g]), default=0)

    def _neighbors(self, g: _Group, producers: Any, consumers: Any) -> list[_Group]:
        outs = set(self.fusion.outputs)
        n: list[_Group] = []
        for p, v in producers.get(g, []):
            # Don't fuse across fusion outputs here (the final merge may) nor into inputs.
            if v in outs or p.is_input:
                continue
            if p not in n:
                n.append(p)
        for c, v in consumers.get(g, []):
            if v in outs:
                continue
            if c not in n:
                n.append(c)
        return n

    def _merge_candidates(self, g: _Group, producers: Any, consumers: Any) -> list[_Group]:
        if g.merged or g.is_input:
            return []
        neighbors = self._neighbors(g, producers, consumers)
        for n in neighbors:
            if n.merged and (abs(n.level - g.level) <= 1 or abs(n.merge_with.level - g.level) <= 1):
                return []
        out = []
        for n in neighbors:
            if abs(n.level - g.level) > 1 or n.merged:
                continue
            ok = True
            for nn in self._neighbors(n, producers, consumers):
                if nn is n or not nn.merged:
                    continue
                if (abs(nn.level - g.level) <= 1 or abs(nn.level - n.level) <= 1
                        or abs(nn.merge_with.level - g.level) <= 1
                        or abs(nn.merge_with.level - n.level) <= 1):
                    ok = False
            if ok:
                out.append(n)
        return out

    def _preferred(self, producers: Any) -> list[tuple[_Group, _Group]]:
        """Select-like ops (select, index_select, gather of one element) merge with the
        producer of the looked-up tensor first (nvFuser's PreferredMergeCandidatePicker)."""
        out = []
        for g in self.groups:
            if len(g.exprs) != 1:
                continue
            e = g.exprs[0]
            if not isinstance(e, (ex.SelectOp, ex.IndexSelectOp, ex.GatherOp)):
                continue
            lookup = e.inputs[0]
            if lookup in self.fusion.inputs:
                continue
            if not isinstance(e, ex.SelectOp):
                axes = [i for i in e.output.domain.logical if not i.is_reduction]
                if not axes[e.dim].is_broadcast:
                    continue
            for p, v in producers[g]:
                if v is lookup and not p.is_input:
                    out.append((g, p))
                    break
        return out

    def _level_merge(self) -> None:
        while True:
            producers, consumers = self._adjacency()
            self._levels(producers)
            for g in self.groups:
                g.merged, g.merge_with = False, None
            pairs: list[tuple[_Group, _Group]] = []

            def setup(g: _Group, candidates: list[_Group], phase: str,
                      pairs: list[tuple[_Group, _Group]] = pairs) -> None:
                if g.merged or g.is_input:
                    return
                for c in candidates:
                    if c.merged:
                        continue
                    if self._try([g, c], phase) is not None:
                        g.merged = c.merged = True
                        g.merge_with, c.merge_with = c, g
                        pairs.append((g, c))
                        return

            for g, p in self._preferred(producers):
                setup(g, [p], "preferred merge of a select-like op with its producer")
            if not pairs:
                for g in list(self.groups):
                    setup(g, self._merge_candidates(g, producers, consumers), f"level merge (level {g.level})")
            if not pairs:
                return
            for a, b in pairs:
                self._merge([a, b])

    def _final_merge(self) -> None:
        while True:
            producers, consumers = self._adjacency()
            up = self._upstream(producers)
            done = False
            for p in list(self.groups):
                cons: list[_Group] = []
                for c, _ in consumers[p]:
                    if c not in cons:
                        cons.append(c)
                for c in cons:
                    # A consumer that also reads another consumer would close a cycle.
                    if any(o in up[c] for o in cons if o is not c):
                        continue
                    if self._try([p, c], "final merge") is not None:
                        self._merge([p, c])
                        done = True
                        break
                if done:
                    break
            if not done:
                return

    def _narrow_boundaries(self) -> None:
        """Move a cast across a segment boundary so that the narrow tensor crosses it: an
        up-cast producing the boundary tensor moves into its reader, a down-cast reading
        it into its producer, when both schedulers accept the groups so changed. A
        group left with a reshape alone then runs as a view (expr_eval)."""
        outputs = set(self.fusion.outputs)
        moved = True
        while moved:
            moved = False
            prod = self._producer_group()
            for a, b, v in self._edges():
                if a.is_input or v in outputs or v in self.boundary or v in self.forced:
                    continue
                uses = self.fusion.uses_of(v)
                if any(u not in b.exprs for u in uses):
                    continue  # v is read elsewhere too: it crosses the boundary anyway
                e = v.definition
                if e in a.exprs and _is_upcast(e) and len(a.exprs) > 1:
                    src, dst, cast_expr = a, b, e
                elif len(uses) == 1 and _is_downcast(uses[0]) and len(b.exprs) > 1:
                    src, dst, cast_expr = b, a, uses[0]
                else:
                    continue
                if prod.get(v) is not a:
                    continue
                rest = [x for x in src.exprs if x is not cast_expr]
                grown = sorted([*dst.exprs, cast_expr], key=self.pos.__getitem__)
                if self._ask(rest)[1] is None or self._ask(grown)[1] is None:
                    continue
                src.exprs[:] = rest
                dst.exprs[:] = grown
                self._groups_changed()
                self._event("narrow", v.short_name,
                            f"boundary narrowed: the cast producing {cast_expr.output.short_name} moved "
                            f"from {src.label()} to {dst.label()}, so the narrower tensor crosses",
                            moved=cast_expr.name, source=src.label(), target=dst.label())
                moved = True
                break

    def _revert_privatized(self) -> None:
        for orig, clones in self.privatized.items():
            members = [orig, *clones]
            for g in self.groups:
                inside = [m for m in members if m in g.exprs]
                if len(inside) < 2:
                    continue
                keep = inside[0]
                for m in inside[1:]:
                    for use in list(self.fusion.uses_of(m.output)):
                        self.fusion.replace_input_of(use, m.output, keep.output)
                    self.fusion.remove_expr(m)
                    g.exprs.remove(m)
                    self._groups_changed()
                self._event("privatize", orig.output.short_name,
                            f"copies of {orig.output.short_name} landed in one group {g.label()}: "
                            f"folded back into {keep.output.short_name}", reverted=True)
        # Exprs were removed: recompute positions for the final order.
        self.pos = {e: k for k, e in enumerate(self.fusion.exprs())}

    # ---- the result ------------------------------------------------------------------------
    def _finish(self) -> SegmentedFusion:
        fusion = self.fusion
        producers, _ = self._adjacency()
        order = self._topo(producers)
        # Kahn's order with ties broken by first expr position: deterministic run order.
        rank = {g: k for k, g in enumerate(order)}
        pending = {g: {p for p, _ in producers[g] if not p.is_input} for g in self.groups}
        ready = sorted([g for g, ps in pending.items() if not ps], key=self._gpos)
        run: list[_Group] = []
        while ready:
            g = ready.pop(0)
            run.append(g)
            for h, ps in pending.items():
                if g in ps:
                    ps.discard(g)
                    if not ps and h not in run and h not in ready:
                        ready.append(h)
            ready.sort(key=self._gpos)
        if len(run) != len(self.groups):
            raise ScheduleError("segment graph is not a DAG")
        del rank

        groups: list[SegmentedGroup] = []
        producer_of: dict[Val, SegmentedGroup] = {}
        for k, g in enumerate(run):
            core = sorted(g.exprs, key=self.pos.__getitem__)
            eff, ins, outs = self._group_io(core)
            verdicts, first = self._ask(core, every=True)
            if first is None:
                reasons = "\n".join(str(v) for v in verdicts)
                names = ", ".join(f"{type(e).__name__} producing {e.outputs[0].short_name}" for e in core)
                raise NoSchedulerError(f"no scheduler accepts the segment of {names}:\n{reasons}")
            fwd = [e for e in eff if e not in set(core)]
            sg = SegmentedGroup(
                id=k, scheduler=str(first), exprs=eff, inputs=ins, outputs=list(outs), complete=fusion,
                scalar_inputs=referenced_symbols(eff, ins, self._symbols), forwarded_exprs=fwd, verdicts=verdicts,
                compile_reasons=self._known_reasons(core),
            )
            groups.append(sg)
            for v in outs:
                producer_of[v] = sg
        edges: list[SegmentedEdge] = []
        for sg in groups:
            for v in sg.inputs:
                p = producer_of.get(v)
                if p is not None and p is not sg:
                    edges.append(SegmentedEdge(p, sg, v, self.sizes.bytes(v)))
        for sg in groups:
            mark_global([*sg.inputs, *sg.outputs])
        boundary = {v for sg in groups for v in [*sg.inputs, *sg.outputs]}
        for sg, g in zip(groups, run):
            sg.cut = self._take_cut(sorted(g.exprs, key=self.pos.__getitem__), boundary)
        sf = SegmentedFusion(fusion, groups, edges, self.sizes, self.options, self.trace)
        if self.trace is not None:
            for sg in groups:
                for v in sg.verdicts:
                    self.trace.event("can_schedule", sg.name, str(v), scheduler=str(v.scheduler),
                                     accepted=v.accepted, reason=v.reason)
                self.trace.event(
                    "segment", sg.name,
                    f"{sg.name} ({sg.scheduler}): {len(sg.exprs)} exprs, inputs "
                    f"{', '.join(v.short_name for v in sg.inputs) or '-'}, outputs "
                    f"{', '.join(v.short_name for v in sg.outputs) or '-'}",
                    scheduler=sg.scheduler, exprs=[e.name for e in sg.exprs],
                    inputs=[v.short_name for v in sg.inputs], outputs=[v.short_name for v in sg.outputs],
                    forwarded=[e.name for e in sg.forwarded_exprs],
                )
            self.trace.stage("segmented_fusion", str(sf))
        return sf
