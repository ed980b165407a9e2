"""Merging groups: one merge attempt (structural refusals first: ops kept apart, boundary
tensors, segment_set, cycles; then the schedulers), recorded as a trace event; and the
pre-merges run before pairwise merging: a cat with its pads, up-cast/down-cast pairs,
reductions with the same signature, and each region between ops no kernel computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.analysis.view_chains import views_only_to_outputs
from engine.ir import exprs as ex
from engine.ir.base import Expr
from engine.ir.tensorview import TensorView
from engine.schedule.base import SchedulerType
from engine.segment.group_graph import Group
from engine.segment.narrowing import is_cast, is_downcast, is_upcast
from engine.segment.regions import is_cut_point, regions


def is_segment_set(e: Expr) -> bool:
    return isinstance(e, ex.LoadStoreOp) and e.kind == "SegmenterSet"


def reduction_signature(g: Group) -> tuple[int, tuple[int, ...]] | None:
    """nvFuser's ReductionSignature: rank of the reduction output's domain and the
    positions of its reduced axes."""
    sig = None
    for e in g.exprs:
        if isinstance(e, (ex.ReductionOp, ex.WelfordOp)):
            out = e.outputs[0]
            dom = out.domain.logical
            sig = (len(dom), tuple(k for k, i in enumerate(dom) if i.is_reduction))
    return sig


# Ops whose every element costs a range reduction (libdevice's sinf/cosf/tanf: tens of
# instructions, a local-memory slow path for large arguments).
_TRIG = frozenset({"sin", "cos", "tan"})
# A trig op is kept out of a group whose tensors are this many times larger (its values
# broadcast to them: recomputed per copy) once that group has this many elements.
_RECOMPUTE_RATIO = 8
_RECOMPUTE_ELEMENTS = 1 << 20


class Merging:
    """The segmenter's merge attempts and pre-merges (a part of the finder,
    engine.segment.segmenter, whose state it reads)."""

    def _largest(self, exprs: Sequence[Expr]) -> int:
        return max((self.sizes.stored_numel(o) for e in exprs for o in e.outputs if isinstance(o, TensorView)),
                   default=0)

    def _recompute_reason(self, groups: Sequence[Group]) -> str | None:
        """Why a merge would compute a trig op once per broadcast copy of its values: its
        group's tensors are small, the merged group's many times larger (a RoPE's cos and
        sin of [S, D] inside the kernel over [B, H, S, D]). Apart, the small group writes
        its values once and the large one reads them."""
        if len(groups) < 2:
            return None
        whole = self._largest([e for g in groups for e in g.exprs])
        if whole < _RECOMPUTE_ELEMENTS:
            return None
        for g in groups:
            trig = next((e for e in g.exprs if isinstance(e, ex.UnaryOp) and e.op in _TRIG), None)
            if trig is None:
                continue
            own = self._largest(g.exprs)
            if whole >= _RECOMPUTE_RATIO * max(1, own):
                return (f"{trig.op} producing {trig.output.short_name} would be computed for each of "
                        f"{whole // max(1, own)} broadcast copies of its group's {own} elements")
        return None

    def _structural_reason(self, groups: Sequence[Group]) -> str | None:
        exprs = [e for g in groups for e in g.exprs]
        why = self._recompute_reason(groups)
        if why is not None:
            return why
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
            if not is_segment_set(e):
                continue
            if views_only_to_outputs(self.fusion, e.output):
                # Followed by views of outputs only (engine.preseg.views_of_outputs_apart):
                # it goes with the views, a segment with no kernel, not with its producer.
                if e.input.definition in inside:
                    return (f"segment_set producing {e.output.short_name} starts views of an output: "
                            "its input's producer is inside the merged group")
            elif any(u in inside for u in self.fusion.uses_of(e.output)):
                return (f"segment_set producing {e.output.short_name} is a segment boundary: "
                        "its output is read inside the merged group")
        # A merge must not create a cycle: no path may leave the merged groups and return.
        members = set(groups)
        _, consumers = self._adjacency()
        frontier = [c for g in groups for c, _ in consumers[g] if c not in members]
        seen: set[Group] = set()
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

    def _try(self, groups: Sequence[Group], phase: str) -> SchedulerType | None:
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

    def _merge_cat_with_pads(self) -> None:
        """A cat reads the pads of its inputs in the same kernel (nvFuser's resize rule)."""
        for cat_group in list(self.groups):
            if cat_group not in self.groups:
                continue
            cats = [e for e in cat_group.exprs if isinstance(e, ex.CatOp)]
            if not cats:
                continue
            prod = self._producer_group()
            pads: list[Group] = []
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
                if not (len(g.exprs) == 1 and is_cast(g.exprs[0])):
                    continue
                first = g.exprs[0]
                for c, _ in consumers[g]:
                    if len(c.exprs) != 1 or not is_cast(c.exprs[0]):
                        continue
                    second = c.exprs[0]
                    if not ((is_upcast(first) and is_downcast(second))
                            or (is_downcast(first) and is_upcast(second))):
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
        def signatures() -> dict[Group, tuple[int, tuple[int, ...]]]:
            return {g: s for g in self.groups if (s := reduction_signature(g)) is not None}

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
