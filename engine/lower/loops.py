"""Loop-nest generation: which expressions share which loops, from loop domains and ca_pos.

An expression runs in the loop nest of its output's loop domain. A producer whose
ca_pos is k shares its first k loops with every consumer, so at nesting level k the
expressions fall into groups joined by "producer inlined past k": each group opens
one loop over its (concrete) IterDomain at that level and is arranged recursively one
level deeper; expressions whose nest ends at level k sit directly in the scope. Items
of a scope are ordered topologically by data dependence (ties keep the fusion's
order); a cycle means the inlining cannot be realised and is reported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.errors import CompileError
from engine.ir.base import Expr
from engine.ir.exprs import ReductionOp, WelfordOp
from engine.ir.iterdomain import IterDomain
from engine.ir.loop_map import loop_map
from engine.ir.tensorview import MemoryType, TensorView


def out_tv(expr: Expr) -> TensorView:
    tvs = [o for o in expr.outputs if isinstance(o, TensorView)]
    if not tvs:
        raise CompileError(f"{expr.op_name}: an expression without tensor outputs cannot be lowered")
    return tvs[0]


def in_tvs(expr: Expr) -> list[TensorView]:
    out: list[TensorView] = []
    for v in expr.inputs:
        if isinstance(v, TensorView) and v not in out:
            out.append(v)
    return out


VirtualKey = Callable[[IterDomain], bool]
# covers(i, like): how many elements a loop over `i` walks, where `i` is split as `like`
# is (else 0: such ids are not compared).
Covers = Callable[[IterDomain, IterDomain], int]


@dataclass
class LoopNode:
    """One loop of the nest: a level, the IterDomains it realises and its children."""

    level: int
    ids: list[IterDomain]  # every expression's loop id at this level (all mapped)
    children: list[LoopNode | Expr] = field(default_factory=list)
    virtual: bool = False  # a level that emits no loop (see Nest)
    # Which id's loop walks more elements (see Nest); None: the last concrete id runs.
    covers: Covers | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def concrete(self) -> IterDomain:
        """The id whose extent the loop runs: the last non-broadcast one, unless another id
        split the same way covers more elements. Ids of one loop may differ so: a
        consumer's merge with a broadcast that another consumer concretizes (an
        index_select's index, broadcast to the table's rank, merged with the table's axes)
        walks more elements than the same split of a producer inlined into both that lacks
        that axis; the loop must run the larger one, as nvFuser's loop promotion does, and
        the others are indexed through it. Found once: a node's ids are fixed when it is
        made, and lowering asks for every index."""
        concrete = [i for i in self.ids if not i.is_broadcast]
        if concrete:
            last = concrete[-1]
            if self.covers is None:
                return last
            return max(reversed(concrete), key=lambda i: self.covers(i, last))
        for i in reversed(self.ids):
            if i.has_expanded_extent:
                return i
        return self.ids[-1]


def _ordered(items: list[list[Expr]], position: dict[Expr, int]) -> list[list[Expr]]:
    """Items (lists of exprs) in dependence order; ties by first fusion position."""
    owner: dict[int, int] = {}
    for k, item in enumerate(items):
        for e in item:
            for o in e.outputs:
                owner[id(o)] = k
    deps: list[set[int]] = [set() for _ in items]
    for k, item in enumerate(items):
        for e in item:
            for v in e.inputs:
                j = owner.get(id(v))
                if j is not None and j != k:
                    deps[k].add(j)
    done: list[int] = []
    left = set(range(len(items)))
    while left:
        ready = [k for k in left if not (deps[k] & left)]
        if not ready:
            names = sorted({out_tv(e).short_name for k in left for e in items[k]})
            raise CompileError(
                "the inlining positions create a dependence cycle between loop nests of "
                + ", ".join(names) + " (a tensor is inlined into a loop that its consumer's "
                "producer closes); lower the compute-at positions"
            )
        k = min(ready, key=lambda j: min(position[e] for e in items[j]))
        done.append(k)
        left.discard(k)
    return [items[k] for k in done]


def _groups(exprs: list[Expr], level: int) -> list[list[Expr]]:
    """Exprs joined when a producer among them is inlined into a consumer past `level`."""
    parent = {e: e for e in exprs}

    def find(e: Expr) -> Expr:
        while parent[e] is not e:
            parent[e] = parent[parent[e]]
            e = parent[e]
        return e

    by_output: dict[int, Expr] = {}
    for e in exprs:
        for o in e.outputs:
            by_output[id(o)] = e
    for e in exprs:
        for p in in_tvs(e):
            d = by_output.get(id(p))
            if d is not None and p.compute_at_pos > level:
                parent[find(d)] = find(e)
    groups: dict[Expr, list[Expr]] = {}
    for e in exprs:
        groups.setdefault(find(e), []).append(e)
    return list(groups.values())




class Nest:
    """The loop nest: real loops as a tree, and for every expression the concrete id of
    each virtual level (a loop that emits no code: thread/block-parallel or a single
    iteration). A virtual level is not a scope: its groups dissolve into the enclosing
    scope, so statements of different virtual groups may interleave as data requires."""

    def __init__(self, exprs: list[Expr], is_virtual: VirtualKey, covers: Covers | None = None) -> None:
        self.position = {e: k for k, e in enumerate(exprs)}
        self.is_virtual = is_virtual
        self.covers = covers
        self.virtual: dict[Expr, dict[int, IterDomain]] = {e: {} for e in exprs}
        self.items = self._scope(exprs, 0)

    def _items(self, exprs: list[Expr], level: int) -> list[LoopNode | Expr]:
        leaves = [e for e in exprs if out_tv(e).nloop <= level]
        out: list[LoopNode | Expr] = list(leaves)
        for g in _groups([e for e in exprs if out_tv(e).nloop > level], level):
            g = sorted(g, key=self.position.__getitem__)
            node = LoopNode(level, [out_tv(e).axis(level) for e in g], covers=self.covers)
            if self.is_virtual(node.concrete) or _invariant(g, node):
                for e in g:
                    self.virtual[e][level] = node.concrete
                out.extend(self._items(g, level + 1))
            else:
                _check_same_iteration(g, level, node)
                node.children = self._scope(g, level + 1)
                out.append(node)
        return out

    def _scope(self, exprs: list[Expr], level: int) -> list[LoopNode | Expr]:
        items = self._items(exprs, level)
        members = [_exprs_of(it) for it in items]
        order = _ordered(members, self.position)
        by_first = {id(m[0]): it for m, it in zip(members, items)}
        return [by_first[id(m[0])] for m in order]


def _invariant(group: list[Expr], node: LoopNode) -> bool:
    """A loop over broadcast axes only, of exprs that write registers or shared memory and
    reduce nothing: every iteration computes the same values into the same elements (a
    broadcast is not allocated), so it runs once (a per-row value kept in its own nest, its
    loop-only broadcast axes extended to the consumer's extents; a per-row mean expanded
    along the row, staged in shared memory). A store to global memory (an expanded output
    is written element by element), or a reduction (over an expanded axis it sums every
    element), keeps the loop."""
    if not all(i.is_broadcast for i in node.ids):
        return False
    for e in group:
        if isinstance(e, (ReductionOp, WelfordOp)):
            return False
        if any(isinstance(o, TensorView) and o.memory_type == MemoryType.Global for o in e.outputs):
            return False
    return True


def _check_same_iteration(group: list[Expr], level: int, node: LoopNode) -> None:
    """A producer that shares this loop with a consumer without being inlined into it (the
    two joined through a tensor inlined into both) is computed one iteration at a time: the
    consumer may only read the element of its own iteration. One that reads along another
    axis would read elements of later iterations, not yet computed (a row sum read along
    the columns of the rows loop that computes it)."""
    made = {id(o): e for e in group for o in e.outputs}
    for e in group:
        c = out_tv(e)
        for p in in_tvs(e):
            if id(p) not in made or p.compute_at_pos > level or p.nloop <= level:
                continue
            if loop_map(p, c).get(p.axis(level)) is not c.axis(level):
                raise CompileError(
                    f"{c.short_name} reads {p.short_name} inside the loop over {node.concrete} that "
                    f"computes {p.short_name} (tensors inlined into both join them), along another "
                    f"axis: elements of later iterations are not computed yet; inline "
                    f"{p.short_name} into {c.short_name} or lower the compute-at positions")


def _exprs_of(item: LoopNode | Expr) -> list[Expr]:
    if not isinstance(item, LoopNode):
        return [item]
    out: list[Expr] = []
    for c in item.children:
        out.extend(_exprs_of(c))
    return out


def walk(nest: Nest):
    """(expr, loops) in program order; loops has one node per level of the expr's nest,
    real loops from the tree and virtual ones for the levels that emit no code."""

    def visit(scope: list[LoopNode | Expr], stack: list[LoopNode]):
        for item in scope:
            if isinstance(item, LoopNode):
                yield from visit(item.children, stack + [item])
            else:
                real = {n.level: n for n in stack}
                loops = []
                for k in range(out_tv(item).nloop):
                    if k in real:
                        loops.append(real[k])
                    else:
                        loops.append(LoopNode(k, [nest.virtual[item].get(k, out_tv(item).axis(k))], virtual=True))
                yield item, loops

    yield from visit(nest.items, [])
