"""The segmenter's working groups and the graph between them: which group produces each
tensor, the edges and adjacency between groups (cached while neither the groups nor the
fusion change), their topological order, and merging groups into one.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import ScheduleError
from engine.ir.base import Expr, Val
from engine.ir.tensorview import TensorView


class Group:
    """A group under construction; `val` is set for the auxiliary group of an input."""

    def __init__(self, exprs: list[Expr], val: Val | None = None) -> None:
        self.exprs = exprs
        self.val = val
        self.level = 0
        self.merged = False
        self.merge_with: Group | None = None

    @property
    def is_input(self) -> bool:
        return self.val is not None

    def label(self) -> str:
        if self.val is not None:
            return f"input {getattr(self.val, 'short_name', '?')}"
        return "g{" + ", ".join(str(n) for n in sorted(e.name for e in self.exprs)) + "}"


class GroupGraph:
    """The groups of the segmenter's finder and the graph between them (a part of the finder,
    engine.segment.segmenter, whose state it reads)."""

    def _producer_group(self) -> dict[Val, Group]:
        m: dict[Val, Group] = dict(self.input_groups)
        for g in self.groups:
            for e in g.exprs:
                for v in e.outputs:
                    m[v] = g
        return m

    def _edges(self) -> list[tuple[Group, Group, Val]]:
        prod = self._producer_group()
        out: dict[tuple[int, int, int], tuple[Group, Group, Val]] = {}
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
    def groups(self) -> list[Group]:
        return self._groups

    @groups.setter
    def groups(self, groups: list[Group]) -> None:
        self._groups = groups
        self._groups_changed()

    def _groups_changed(self) -> None:
        """Every edit of the groups (the list, or a group's exprs) comes through here."""
        self._generation += 1

    def _adjacency(self) -> tuple[dict[Group, list[tuple[Group, Val]]], dict[Group, list[tuple[Group, Val]]]]:
        """Producer and consumer groups of every group (shared: callers only read them),
        kept while neither the groups nor the fusion change: every merge attempt asks."""
        key = (self._generation, self.fusion.version)
        if self._adjacency_cache is None or self._adjacency_cache[0] != key:
            self._adjacency_cache = (key, self._fresh_adjacency())
        return self._adjacency_cache[1]

    def _fresh_adjacency(self) -> tuple[dict[Group, list[tuple[Group, Val]]],
                                        dict[Group, list[tuple[Group, Val]]]]:
        producers: dict[Group, list[tuple[Group, Val]]] = {g: [] for g in self.groups}
        consumers: dict[Group, list[tuple[Group, Val]]] = {g: [] for g in [*self.groups, *self.input_groups.values()]}
        for p, c, v in self._edges():
            producers[c].append((p, v))
            consumers[p].append((c, v))
        return producers, consumers

    def _upstream(self, producers: dict[Group, list[tuple[Group, Val]]]) -> dict[Group, set[Group]]:
        """All groups each group depends on (transitively), input groups excluded."""
        memo: dict[Group, set[Group]] = {}
        for g in self._topo(producers):
            s: set[Group] = set()
            for p, _ in producers[g]:
                if not p.is_input:
                    s.add(p)
                    s |= memo[p]
            memo[g] = s
        return memo

    def _topo(self, producers: dict[Group, list[tuple[Group, Val]]]) -> list[Group]:
        order: list[Group] = []
        state: dict[Group, int] = {}
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

    def _gpos(self, g: Group) -> int:
        return min((self.pos[e] for e in g.exprs), default=-1)

    def _merge(self, groups: Sequence[Group]) -> Group:
        exprs = sorted({e for g in groups for e in g.exprs}, key=self.pos.__getitem__)
        joined = Group(exprs)
        gone = set(groups)
        self.groups = sorted([g for g in self.groups if g not in gone] + [joined], key=self._gpos)
        return joined
