"""The segmenter's result: the merged groups in a deterministic run order, each a
SegmentedGroup (forwarded chains replicated in) with every scheduler's verdict, the edges
between them with their bytes, boundary tensors in global memory, and the segments' trace
events.
"""

from __future__ import annotations

from engine.errors import NoSchedulerError, ScheduleError
from engine.ir.base import Val
from engine.segment.cut import referenced_symbols
from engine.segment.graph import SegmentedEdge, SegmentedFusion, SegmentedGroup, mark_global
from engine.segment.group_graph import Group


class Assembly:
    """The segmenter's result (a part of the finder, engine.segment.segmenter, whose state it
    reads)."""

    def _finish(self) -> SegmentedFusion:
        fusion = self.fusion
        producers, _ = self._adjacency()
        order = self._topo(producers)
        # Kahn's order with ties broken by first expr position: deterministic run order.
        rank = {g: k for k, g in enumerate(order)}
        pending = {g: {p for p, _ in producers[g] if not p.is_input} for g in self.groups}
        ready = sorted([g for g, ps in pending.items() if not ps], key=self._gpos)
        run: list[Group] = []
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
                raise NoSchedulerError(f"no scheduler accepts the segment of {names}:\n{reasons}",
                                       frozenset(e.name for e in core))
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
