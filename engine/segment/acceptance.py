"""Asking the schedulers about a candidate group: the group's exprs, inputs and outputs, its
cut out of the complete fusion at the example sizes, every scheduler's verdict in priority
order (kept per group: no scheduler is asked twice about one group), and the chosen
scheduler. Refusals that an earlier compile learned refuse a scheduler before it is asked.
When segmenting ends, a group's cut goes to its segment if cutting again would make the
same fusion; the other cuts are released.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.ir.base import Expr, Val
from engine.ir.fusion import Fusion
from engine.ir.logical_map import pairwise_maps_frozen
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.runtime.device import DeviceProperties, current
from engine.schedule import registry, tools
from engine.schedule.base import PRIORITY, SchedulerType, Verdict
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.segment.cut import cut_fusion, referenced_symbols, shareable_domains, unshare
from engine.segment.graph import mark_global


@dataclass
class Asked:
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
    # unshare continues before the cut becomes a segment (see cut.shareable_domains).
    shared: dict[int, Any] = field(default_factory=dict)
    memo: dict[int, Any] = field(default_factory=dict)
    _info: SchedulerRuntimeInfo | None = None

    def info(self) -> SchedulerRuntimeInfo:
        if self._info is None:
            self._info = SchedulerRuntimeInfo(self.sub, self.args, self.device)
        return self._info


def no_free_symbols(fusion: Fusion) -> bool:
    for v in fusion.all_vals:
        if isinstance(v, Scalar) and v.value is None:
            return False
        if isinstance(v, TensorView):
            d = v.domain
            for i in (*d.maybe_root, *d.logical, *d.loop, *(d.allocation or ())):
                if i.extent.value is None or (i.expanded_extent is not None and i.expanded_extent.value is None):
                    return False
    return True


def group_key(core: Sequence[Expr]) -> frozenset[tuple[int, ...]]:
    """A group's identity for its verdicts: its exprs with what each reads, since rewiring
    an expr (privatized casts folded back) changes the group a verdict was made for."""
    return frozenset((id(e), *(id(v) for v in e.inputs)) for e in core)


class Acceptance:
    """The segmenter's questions to the schedulers (a part of the finder,
    engine.segment.segmenter, whose state it reads)."""

    def release_trials(self) -> None:
        """Free the candidate fusions now that segmentation is over: the compile pauses the
        cycle collector, whose first pass after it would otherwise walk every one of these
        (cyclic) graphs; nothing reads them any more (verdicts and trace events are text)."""
        for asked in self.cache.values():
            asked.sub.release(shared=asked.shared.values())
        self.cache.clear()

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
        key = group_key(core)
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

    def _cut(self, core: Sequence[Expr]) -> Asked:
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
        return Asked(sub, val_map, args, current(self.options.device_model),
                     self.fusion.version, shared=shared, memo=memo if shared else {})

    def _static(self) -> bool:
        """Whether the fusion, as it is now, has no free symbol: no symbolic extent and no
        scalar input. Then a cut that shares domains (whose extents are the complete
        fusion's) and copies its inputs' (whose extents are copies) compares and evaluates
        every extent by its value, as one copy would."""
        version = self.fusion.version
        if self._static_at is None or self._static_at[0] != version:
            self._static_at = (version, no_free_symbols(self.fusion))
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
        key = group_key(core)
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
        asked = self.cache.get(group_key(core))
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
