"""Loop indices: the index each loop of the nest gives an expression, and a tensor's indices
seeded from the loops it runs in.

A loop gives its variable, a thread or block index, or 0 (a virtual loop); a loop that runs
a larger (promoted) id than the tensor's own, where a consumer merged a broadcast in, gives
the tensor's indices through the consumer it is inlined into (or, when none is, through an
inlined producer), as nvFuser's loop promotion does. A part of ExprLowering
(engine.lower.lowering), whose state it reads.
"""

from __future__ import annotations

from engine.ir.iterdomain import IterDomain, ParallelType
from engine.ir.logical_map import consumers_of, logical_map
from engine.ir.loop_map import loop_map
from engine.ir.tensorview import TensorView
from engine.lower.index import Ix, producer_known, propagate
from engine.lower.kexpr import Var
from engine.lower.loops import LoopNode
from engine.lower.split_chains import same_split_source

THREAD_VARS = {
    ParallelType.block_x: "threadIdx.x", ParallelType.block_y: "threadIdx.y", ParallelType.block_z: "threadIdx.z",
    ParallelType.grid_x: "blockIdx.x", ParallelType.grid_y: "blockIdx.y", ParallelType.grid_z: "blockIdx.z",
}


class LoopIndexing:
    """The loop indices of ExprLowering (its `ext`, `launch_dims`, `rfactor_source` and the
    memo tables `_seeded` and `_forwarded`)."""

    def loop_index(self, node: LoopNode, own: IterDomain | None = None) -> Ix:
        """The index a loop gives: its variable, a thread/block index, or 0.

        In a virtual loop (merged parallel or single-iteration groups) each expression's
        own id gives the range, since the merged groups may differ in extent.
        """
        c = node.concrete
        pt = c.parallel_type
        n = self.ext.of(own if (node.virtual and own is not None) else c)
        if pt in THREAD_VARS:
            return Ix(Var(THREAD_VARS[pt]), 0, n)
        if node.virtual:
            return Ix(0, 0, 1)
        return Ix(Var(f"i{c.name}"), 0, n)

    def output_index(self, out: TensorView, loops: list[LoopNode]) -> dict[IterDomain, Ix]:
        return self.loop_seeded_index(out, loops, len(loops))

    def forwarded(self, node: LoopNode, own: IterDomain) -> bool:
        """The loop runs a larger (promoted) id than `own`: a consumer merged a broadcast in.
        Split outputs may have the loop's extent and still split a smaller id (a tensor
        before a broadcast, in the loop of the tensor after it): their splits differ."""
        if own.is_broadcast and own not in self.ext.promoted:
            return False
        concrete = node.concrete
        # Asked for every loop level of every index; extents, promotions and rfactor
        # sources are fixed while lowering, so the answer per pair of ids is too.
        key = (own, concrete)
        got = self._forwarded.get(key)
        if got is None:
            got = self._forwarded[key] = (
                self.ext.of(own) != self.ext.of(concrete)
                or not same_split_source(own, concrete, self.ext, self.rfactor_source))
        return got

    def loop_seeded_index(self, tv: TensorView, loops: list[LoopNode], upto: int,
                          avoid: frozenset[TensorView] = frozenset()) -> dict[IterDomain, Ix]:
        """Indices of `tv`'s ids from the loops below `upto`.

        Loop ids the loops run directly take the loop's index; the positions shared with
        a consumer (ca_pos) also take what the consumer's indices give through the op, so
        an axis whose loop is a consumer's merge with a broadcast is indexed correctly.
        """
        return dict(self._seeded_index(tv, loops, upto, avoid))

    def _seeded_index(self, tv: TensorView, loops: list[LoopNode], upto: int,
                      avoid: frozenset[TensorView], tail: tuple[tuple[int, Ix], ...] = ()
                      ) -> dict[IterDomain, Ix]:
        """loop_seeded_index, shared (callers must not change it). The result depends on the
        loops below `upto` only through their concrete ids and virtual flags (walk makes
        new virtual nodes per expression, so the nodes themselves do not key it); the
        schedule, extents and rfactor sources are fixed while lowering. `tail`: indices of
        loop positions at or past `upto` that a producer runs itself (see _tail)."""
        key = (tv, upto, avoid, tuple((n.concrete, n.virtual) for n in loops[:upto]), tail)
        got = self._seeded.get(key)
        if got is None:
            got = self._seeded[key] = self._fresh_seeded_index(tv, loops, upto, avoid, tail)
        return got

    def _fresh_seeded_index(self, tv: TensorView, loops: list[LoopNode], upto: int,
                            avoid: frozenset[TensorView], tail: tuple[tuple[int, Ix], ...]
                            ) -> dict[IterDomain, Ix]:
        known: dict[IterDomain, Ix] = {}
        for k in range(min(upto, tv.nloop)):
            i = tv.axis(k)
            if i.is_broadcast and i not in self.ext.promoted:
                known[i] = Ix(0, 0, 1)
            elif not self.forwarded(loops[k], i):
                known[i] = self.loop_index(loops[k], i)
        for k, ix in tail:
            known.setdefault(tv.axis(k), ix)
        m = min(upto, tv.compute_at_pos)
        consumers = [c for c in consumers_of(tv) if c not in avoid] if m > 0 else []
        if consumers:
            promoted = any(self.forwarded(loops[k], tv.axis(k)) for k in range(min(m, tv.nloop)))
            tail = self._tail(tv, consumers[0], known, m) if promoted else ()
            c_idx = self._seeded_index(consumers[0], loops, m, avoid, tail)
            for pid, ix in producer_known(tv, consumers[0], c_idx, self.ext).items():
                known.setdefault(pid, ix)
        elif any(self.forwarded(loops[k], tv.axis(k)) for k in range(min(upto, tv.nloop))):
            self._seed_from_producer(tv, loops, upto, known, avoid | {tv})
        return propagate(tv, known, self.ext)

    def _tail(self, tv: TensorView, consumer: TensorView, known: dict[IterDomain, Ix], m: int
              ) -> tuple[tuple[int, Ix], ...]:
        """`tv`'s indexed loop ids past its compute-at position `m` that iterate the loop of
        the consumer's id at the same position (a vectorized cache's vector axis, outside the
        loops it shares): with them the consumer's indices, and so tv's, are complete even
        where the shared loops run a larger (promoted) id than tv's own."""
        lm = loop_map(tv, consumer)
        return tuple((k, known[i]) for k, i in enumerate(tv.domain.loop[m:consumer.nloop], m)
                     if i in known and lm.get(i) is consumer.axis(k))

    def _seed_from_producer(self, tv: TensorView, loops: list[LoopNode], upto: int,
                            known: dict[IterDomain, Ix], avoid: frozenset[TensorView]) -> None:
        """A tensor no consumer is inlined into, in loops that run another tensor's (larger)
        ids: its logical indices are those of an inlined producer's, whose own indices come
        through that producer's other consumers (as nvFuser's loop promotion gives them)."""
        d = tv.definition
        for p in (d.inputs if d is not None else []):
            if not isinstance(p, TensorView) or p.compute_at_pos == 0:
                continue
            p_idx = self._seeded_index(p, loops, min(upto, p.compute_at_pos), avoid)
            for pid, cid in logical_map(p, tv, map_broadcast=False).items():
                if pid in p_idx:
                    known.setdefault(cid, p_idx[pid])
            return
