"""TensorView's loop-domain transforms: split, merge, swizzle, reorder, loop-only
broadcasts and parallel types. Each runs in a transaction (engine.ir.transactions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.iterdomain import (
    IterDomain,
    IterType,
    Merge,
    ParallelType,
    Split,
    Swizzle,
    SwizzleType,
    swizzle_extent_error,
)
from engine.ir.scalar import ScalarLike
from engine.ir.transactions import transaction

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


class LoopTransformsMixin:
    """The loop-domain transforms of TensorView (which inherits them)."""

    def split(self, axis: int, factor: ScalarLike, inner_split: bool = True) -> TensorView:
        pos = self._pos(axis)
        self._check_outside_ca(pos, "split")
        if isinstance(factor, bool) or (isinstance(factor, int) and factor <= 0):
            raise ScheduleError(f"{self.short_name}: split factor must be a positive int, got {factor}")
        with transaction([self], loop_edit=True):
            s = Split(self.domain.loop[pos], factor, inner_split)
            self.domain.loop[pos : pos + 1] = [s.outer, s.inner]
            self._follow_allocation(s)
        return self

    def outer_split(self, axis: int, factor: ScalarLike) -> TensorView:
        """Split so that the outer axis has `factor` elements (nvFuser's outer_split)."""
        return self.split(axis, factor, inner_split=False)

    def inner_split(self, axis: int, factor: ScalarLike) -> TensorView:
        """Split so that the inner axis has `factor` elements (nvFuser's inner_split)."""
        return self.split(axis, factor, inner_split=True)

    def merge(self, axis_o: int, axis_i: int | None = None) -> TensorView:
        po = self._pos(axis_o)
        pi = po + 1 if axis_i is None else self._pos(axis_i)
        if pi >= self.nloop or po == pi:
            raise ScheduleError(f"{self.short_name}: cannot merge axis {axis_o} with {axis_i}")
        self._check_outside_ca(min(po, pi), "merge")
        outer, inner = self.domain.loop[po], self.domain.loop[pi]
        if (outer.is_reduction != inner.is_reduction) and not (
            outer.is_broadcast or inner.is_broadcast
        ):
            raise ScheduleError(
                f"{self.short_name}: cannot merge {outer} and {inner}: "
                "iteration and reduction axes do not merge"
            )
        with transaction([self], loop_edit=True):
            m = Merge(outer, inner)
            loop = self.domain.loop
            lo = min(po, pi)
            rest = [d for k, d in enumerate(loop) if k not in (po, pi)]
            rest.insert(lo, m.out)
            self.domain.loop = rest
            self._follow_allocation(m)
        return self

    def swizzle(self, swizzle_type: SwizzleType, axis_x: int, axis_y: int) -> TensorView:
        """Swizzle two loop axes of equal extent in place (nvFuser's TensorView::swizzle):
        axis_y becomes a permutation of itself chosen by axis_x's index (see Swizzle).
        Extents not known yet are checked when the kernel is lowered."""
        if not isinstance(swizzle_type, SwizzleType):
            raise ScheduleError(f"{self.short_name}: expected a SwizzleType, got {swizzle_type!r}")
        px, py = self._pos(axis_x), self._pos(axis_y)
        if px == py:
            raise ScheduleError(f"{self.short_name}: cannot swizzle axis {axis_x} with itself")
        self._check_outside_ca(min(px, py), "swizzle")
        x, y = self.domain.loop[px], self.domain.loop[py]
        for i in (x, y):
            if not i.is_iteration:
                raise ScheduleError(f"{self.short_name}: cannot swizzle {i}: only iteration axes swizzle")
        why = swizzle_extent_error(swizzle_type, x.extent, y.extent)
        if why is not None:
            raise ScheduleError(f"{self.short_name}: cannot swizzle {x} and {y}: {why}")
        with transaction([self], loop_edit=True):
            s = Swizzle(x, y, swizzle_type)
            self.domain.loop[px], self.domain.loop[py] = s.out_x, s.out_y
        return self

    def reorder(self, old2new: dict[int, int] | Sequence[int]) -> TensorView:
        """Move axes: {old: new} as nvFuser, or a full permutation list new[i] = old."""
        n = self.nloop
        fixed = self.domain.loop[: max(self.compute_at_pos, self.max_producer_pos)]
        if isinstance(old2new, dict):
            mapping = {self._pos(o): self._pos(w) for o, w in old2new.items()}
            if len(set(mapping.values())) != len(mapping):
                raise ScheduleError(f"{self.short_name}: reorder {old2new} repeats a target")
            new: list[IterDomain | None] = [None] * n
            for o, w in mapping.items():
                new[w] = self.domain.loop[o]
            rest = iter(d for k, d in enumerate(self.domain.loop) if k not in mapping)
            loop = [d if d is not None else next(rest) for d in new]
        else:
            perm = [self._pos(p) for p in old2new]
            if sorted(perm) != list(range(n)):
                raise ScheduleError(f"{self.short_name}: reorder {list(old2new)} is not a permutation")
            loop = [self.domain.loop[p] for p in perm]
        if any(loop[k] is not d for k, d in enumerate(fixed)):
            raise ScheduleError(f"{self.short_name}: reorder moves axes inside the inlined positions")
        # Reorder changes iteration order only: the allocation domain (memory order)
        # stays as it is.
        with transaction([self], loop_edit=True):
            self.domain.loop = loop
        return self

    def broadcast_loop(self, axis: int, extent: ScalarLike = 1) -> TensorView:
        """Insert a broadcast id of `extent` at loop position `axis` (0..nloop), in the loop
        domain only (nvFuser's TensorView::broadcast): the tensor runs one more loop, along
        which nothing of it varies. It lets this tensor be inlined into a consumer whose
        loop domain has a broadcast axis where this one has none (x * broadcast(w) with w's
        producers computed inside x's loops): inlining pairs loops by position. Buffers
        leave it out and it is indexed 0 (or the index of the loop it was promoted to)."""
        n = self.nloop
        pos = axis + n + 1 if axis < 0 else axis
        if not 0 <= pos <= n:
            raise ScheduleError(f"{self.short_name}: broadcast position {axis} is outside 0..{n}")
        self._check_outside_ca(pos, "insert a broadcast at")
        if isinstance(extent, bool) or (isinstance(extent, int) and extent <= 0):
            raise ScheduleError(f"{self.short_name}: broadcast extent must be a positive int, got {extent}")
        with transaction([self], loop_edit=True):
            b = IterDomain(self.fusion, extent, IterType.Broadcast)
            self.domain.loop.insert(pos, b)
            self.domain.loop_only.append(b)
        return self

    def parallelize(self, axis: int, parallel_type: ParallelType) -> TensorView:
        if not isinstance(parallel_type, ParallelType):
            raise ScheduleError(f"{self.short_name}: expected a ParallelType, got {parallel_type!r}")
        with transaction([self], loop_edit=True):
            self.axis(axis).parallelize(parallel_type)
        return self
