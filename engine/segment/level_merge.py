"""Pairwise merging of neighbouring groups: level-based rounds (Herrmann et al., as nvFuser
does; select-like ops merge with their lookup's producer first), then the final merge of
producers with consumers, which may fuse through fusion outputs, then the merge of sibling
kernels: groups with no path between them that read the same fusion input.
"""

from __future__ import annotations

from typing import Any

from engine.ir import exprs as ex
from engine.ir.base import Val
from engine.ir.tensorview import TensorView
from engine.schedule.base import SchedulerType
from engine.segment.group_graph import Group

# Schedulers whose segments launch no kernel of this engine: merging another group into one
# of them would make the kernel compute what was a view or a library call.
NO_KERNEL = (SchedulerType.expr_eval, SchedulerType.no_op)


class LevelMerge:
    """The segmenter's pairwise merging (a part of the finder, engine.segment.segmenter,
    whose state it reads)."""

    def _levels(self, producers: dict[Group, list[tuple[Group, Val]]]) -> None:
        for g in self.input_groups.values():
            g.level = 0
        for g in self._topo(producers):
            g.level = max((p.level + 1 for p, _ in producers[g]), default=0)

    def _neighbors(self, g: Group, producers: Any, consumers: Any) -> list[Group]:
        outs = set(self.fusion.outputs)
        n: list[Group] = []
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

    def _merge_candidates(self, g: Group, producers: Any, consumers: Any) -> list[Group]:
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

    def _preferred(self, producers: Any) -> list[tuple[Group, Group]]:
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
            pairs: list[tuple[Group, Group]] = []

            def setup(g: Group, candidates: list[Group], phase: str,
                      pairs: list[tuple[Group, Group]] = pairs) -> None:
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
                cons: list[Group] = []
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

    def _kernel_scheduler(self, g: Group) -> SchedulerType | None:
        """The scheduler that takes the group, where it launches a kernel of this engine."""
        if g.is_input or not g.exprs:
            return None
        first = self._ask(g.exprs)[1]
        return None if first in NO_KERNEL else first

    def _inputs_read(self, g: Group) -> set[int]:
        """The fusion inputs a group reads, directly or through the forwarded chains (views
        and casts of an input that every segment recomputes)."""
        inputs = {id(v) for v in self.fusion.inputs}
        out: set[int] = set()
        read = [v for e in g.exprs for v in e.inputs]
        for x in [*self.forwarding.exprs_for(read), *g.exprs]:
            out |= {id(v) for v in x.inputs if isinstance(v, TensorView) and id(v) in inputs}
        return out

    def _sibling_merge(self) -> None:
        """Kernels that read the same fusion input and depend on each other through no
        path (a RoPE's q and k rotations reading one cos and sin) become one kernel where a
        scheduler takes them together: one launch, and the shared input read once. nvFuser
        gets this by scheduling the whole fusion before it segments; here the groups that
        segmentation left apart are tried pairwise, in fusion order, where one scheduler takes
        each of them and both together: a kernel of another kind (a reduction kernel given a
        pointwise part) ran slower on an H200 than the two kernels it replaced."""
        while True:
            kinds = {g: self._kernel_scheduler(g) for g in self.groups}
            kernels = [g for g in self.groups if kinds[g] is not None]
            reads = {g: self._inputs_read(g) for g in kernels}
            merged = False
            for k, a in enumerate(kernels):
                for b in kernels[k + 1:]:
                    if kinds[a] != kinds[b] or not reads[a] & reads[b]:
                        continue
                    first = self._try([a, b], "sibling merge")
                    if first is not None and first == kinds[a]:
                        self._merge([a, b])
                        merged = True
                        break
                if merged:
                    break
            if not merged:
                return

    def _absorb_input_views(self) -> None:
        """A reshape of an input kept apart while merging (boundaries.py) joins the kernel
        that reads it where that kernel's scheduler takes it (a persistent scheduler takes
        split-only reshapes): one host step fewer. It stays apart, a view without a
        kernel, where the merged group would be refused or taken by another scheduler."""
        for v in list(self.input_views):
            owner = next((g for g in self.groups if v.definition in g.exprs), None)
            if owner is None or len(owner.exprs) != 1:
                continue
            readers = {g for g in self.groups for e in g.exprs if v in e.inputs}
            if len(readers) != 1:
                continue
            reader, = readers
            kind = self._kernel_scheduler(reader)
            why = self.boundary.pop(v)
            if kind is not None and self._try([owner, reader], "input view absorbed") == kind:
                self._merge([owner, reader])
            else:
                self.boundary[v] = why
