"""Predicates: the conditions that guard an expression's statement.

Threads beyond a loop's extent, iterations past the end of a non-divisible split of a
promoted loop, one writer per element where several threads or blocks would write the same
one (a broadcast axis bound to a launched dimension, a shared tensor), and the bounds of
every index a tensor is addressed with. A part of ExprLowering (engine.lower.lowering),
whose state it reads.
"""

from __future__ import annotations

from engine.errors import CompileError
from engine.ir.iterdomain import IterDomain, ParallelType, Resize, Split
from engine.ir.logical_map import consumers_of
from engine.ir.tensorview import TensorView
from engine.lower import cexpr
from engine.lower.index import Extents, Ix, lower_bound_test
from engine.lower.kexpr import FALSE, Cmp, Expr, Paren, Var
from engine.lower.loop_index import THREAD_VARS
from engine.lower.loops import LoopNode

_GRID_DIMS = (ParallelType.grid_x, ParallelType.grid_y, ParallelType.grid_z)


class Predicates:
    """The predicates of ExprLowering (its `ext`, `launch_dims`, buffers and loop indices)."""

    def thread_predicates(self, loops: list[LoopNode], out: TensorView | None = None) -> list[Expr]:
        preds: list[Expr] = []
        for k, node in enumerate(loops):
            own = out.axis(k) if out is not None else None
            if own is not None and own.is_broadcast and own not in self.ext.promoted:
                continue
            if own is not None and self.forwarded(node, own):
                continue  # bounds come through the consumer's indices
            ix = self.loop_index(node, own)
            pt = node.concrete.parallel_type
            if pt in THREAD_VARS and ix.hi < self.launch_dims.get(pt, 1):
                cond = Cmp(Var(THREAD_VARS[pt]), "<", ix.hi)
                if cond not in preds:
                    preds.append(cond)
        return preds

    def promoted_loop_predicates(self, loops: list[LoopNode], out: TensorView) -> list[Expr]:
        """Bounds of the loop nest itself for a tensor that runs in larger (promoted) loops
        and that no consumer is inlined into. Its indices come from an inlined producer
        (_seed_from_producer), so its own bounds only say that those indices are in range:
        the iterations past the end of a non-divisible split of the promoted loop (threads
        112..127 of a 112-element loop) still map to valid elements and would write what
        the producer, predicated off there, never computed. Every
        split among the loop ids' definitions whose outer and inner parts the nest runs
        bounds its input."""
        if out.compute_at_pos > 0 and consumers_of(out):
            return []  # bounds come through the consumer's indices
        if not any(self.forwarded(n, out.axis(k)) for k, n in enumerate(loops) if k < out.nloop):
            return []
        known = {n.concrete: self.loop_index(n) for n in loops}
        preds: list[Expr] = []
        queue = list(known)
        while queue:
            t = queue.pop(0).definition
            if not isinstance(t, Split) or t.in_id in known or t.outer not in known or t.inner not in known:
                continue
            o, i = known[t.outer], known[t.inner]
            n = self.ext.of(t.inner)
            ix = Ix(cexpr.add(cexpr.mul(o.term, n), i.term), o.lo * n + i.lo, (o.hi - 1) * n + i.hi)
            known[t.in_id] = ix
            queue.append(t.in_id)
            if ix.hi > self.ext.of(t.in_id):
                pred = Cmp(_wrap(ix.term), "<", self.ext.of(t.in_id))
                if pred not in preds:
                    preds.append(pred)
        return preds

    def redundant_write_predicates(self, loops: list[LoopNode], out: TensorView,
                                   one_block: frozenset[ParallelType] = frozenset()) -> list[Expr]:
        """One writer per element of a global output that has a broadcast axis bound to a
        thread or block dimension: every index along it addresses the same element (an
        expanded input passed on between segments was written by all 32 blocks of a RoPE
        kernel's blockIdx.y). Only for outputs the kernel does not read back, which other
        blocks would then read before the one writer has written. Along `one_block` (block
        dimensions a grid reduction feeding `out` reduced) the writer is already one block,
        the last to arrive, which need not be block 0."""
        if self.buffer(out).memory != "global" or out.uses:
            return []
        preds: list[Expr] = []
        for k, node in enumerate(loops):
            own = out.axis(k)
            if own is None or not own.is_broadcast or own in self.ext.promoted:
                continue
            pt = node.concrete.parallel_type
            if pt in THREAD_VARS and self.launch_dims.get(pt, 1) > 1 and pt not in one_block:
                preds.append(Cmp(Var(THREAD_VARS[pt]), "==", 0))
        # A launched block dimension that no loop of the write binds does not move its
        # address: every block along it would write the same elements (a [N] iota output
        # beside a [M, N] one whose rows are blockIdx.y: M copies of the same writes).
        bound = {node.concrete.parallel_type for node in loops}
        for pt in _GRID_DIMS:
            if pt not in bound and self.launch_dims.get(pt, 1) > 1 and pt not in one_block:
                cond = Cmp(Var(THREAD_VARS[pt]), "==", 0)
                if cond not in preds:
                    preds.append(cond)
        return preds

    def shared_write_predicates(self, loops: list[LoopNode], out: TensorView) -> list[Expr]:
        """One writer per element of a shared tensor: the block's threads share the buffer, and
        those along a launched thread dimension that no loop of the write binds (the tensor's
        loop is serial there, or its axis a broadcast, which the buffer does not hold) would
        all write the same elements; as with nvFuser's thread predicates, only thread 0 along
        that dimension writes (a barrier then separates the writes from other threads' reads).
        Bulk loops share their iterations among the threads already."""
        if self.buffer(out).memory != "shared":
            return []
        owned: set[ParallelType] = set()
        for k, node in enumerate(loops):
            pt = node.concrete.parallel_type
            if pt == ParallelType.bulk:
                return []
            own = out.axis(k) if k < out.nloop else None
            if pt.is_thread_dim and not (own is not None and own.is_broadcast):
                owned.add(pt)
        return [Cmp(Var(THREAD_VARS[pt]), "==", 0) for pt in (ParallelType.block_x, ParallelType.block_y, ParallelType.block_z)
                if pt not in owned and self.launch_dims.get(pt, 1) > 1]

    def bounds_predicates(self, tv: TensorView, index: dict[IterDomain, Ix],
                          skip: frozenset[IterDomain] = frozenset()) -> list[Expr]:
        out: list[Expr] = []
        for i in _checked_ids(tv, self.ext):
            if i.is_broadcast or i in skip:
                continue
            ix = index.get(i)
            if ix is None:
                raise CompileError(f"{tv.short_name}: axis {i} cannot be indexed from the loop nest",
                                   tensor=tv.short_name)
            n = self.ext.of(i)
            if isinstance(ix.term, int):
                if not 0 <= ix.term < n:
                    out.append(FALSE)
                continue
            # A quotient and a remainder of one dividend share their lower bound test.
            if ix.lo < 0 and (low_test := lower_bound_test(ix, _wrap)) not in out:
                out.append(low_test)
            if ix.hi > n:
                out.append(Cmp(_wrap(ix.term), "<", n))
        return out


def _checked_ids(tv: TensorView, ext: Extents) -> list[IterDomain]:
    """Logical ids, and root ids an rfactor or reshape transformed (a split may overhang them).
    Root ids of a pad's Resize are not checked: out of the input's range is the padding.
    `ext` keeps the tensor's transforms (tv_transforms) for the whole lowering."""
    dom = tv.domain
    ids = list(dom.logical)
    if dom.root is not None:
        logical = set(dom.logical)
        ids += [r for r in dom.root if r not in logical and not any(isinstance(u, Resize) for u in r.uses)]
    # A split whose pieces overhang its input (a non-divisible inner split) would repeat
    # elements: the input of every split between logical and loop is checked too.
    seen = set(ids)
    for t in ext.transforms(tv):
        if isinstance(t, Split) and t.in_id not in seen:
            seen.add(t.in_id)
            ids.append(t.in_id)
    return ids


def _wrap(t: cexpr.Term) -> cexpr.Term:
    """`t` as a comparison's operand: parenthesised unless a constant or a name."""
    if isinstance(t, int):
        return t if t >= 0 else Paren(t)
    plain = isinstance(t, Var) and (t.name.isidentifier() or t.name.replace(".", "").isalnum())
    return t if plain else Paren(t)

