"""The TensorView primitives that put a new tensor into the fusion and return it: the caches
(cache_after, cache_before, cache_fork) and rfactor.

A new tensor is made as `type(self)(...)`: TensorView, which inherits these methods (this
module cannot import it: engine.ir.tensorview imports this module)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.base import Expr, open_definition
from engine.ir.exprs import CatOp, LoadStoreOp
from engine.ir.iterdomain import IterDomain
from engine.ir.rfactor import rfactor
from engine.ir.tensordomain import TensorDomain
from engine.ir.tensorview_memory import MemoryType
from engine.ir.transactions import verify_around

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


class TensorInsertMixin:
    """The caches and rfactor of TensorView (which inherits them)."""

    # ---- caches -----------------------------------------------------------------------
    def _refuse_cat_use(self, what: str, uses: Sequence[Expr]) -> None:
        # A cat reads where each input's data lies from the pad (Resize) that made the
        # input: a copy between the pad and the cat would lose it.
        if any(isinstance(e, CatOp) for e in uses):
            raise ScheduleError(
                f"{self.short_name}: {what} between a pad and the cat that reads it is not allowed"
            )

    def _fresh_copy(self) -> tuple[TensorView, dict[IterDomain, IterDomain]]:
        """A new local tensor with fresh copies of this tensor's non-reduction logical ids."""
        src = [i for i in self.domain.logical if not i.is_reduction]
        ids = [_copy_id(i) for i in src]
        tv = type(self)(self.fusion, TensorDomain(ids), self.dtype, MemoryType.Local)
        return tv, dict(zip(src, ids))

    def _mapped_allocation(self, id_map: dict[IterDomain, IterDomain]) -> list[IterDomain] | None:
        """This tensor's allocation order in another tensor's ids, when it is a permutation."""
        alloc = self.domain.allocation
        if alloc is None:
            return None
        kept = [i for i in alloc if not i.is_reduction]
        if not all(i in id_map for i in kept):
            return None
        return [id_map[i] for i in kept]

    def cache_after(self, cache_op: str = "Unspecified", op_type: str = "Set",
                    uses: list[Expr] | None = None) -> TensorView:
        """Insert `cache = set(self)` and make every use of `self` (or those of `uses`, as
        nvFuser's cached_uses) read the cache.

        The cache's allocation domain is derived, not copied (seed 001): when `self`
        has an allocation domain that is a permutation of its logical domain, the cache
        gets the same order over its own ids with fresh contiguity (a cache is dense),
        and from then on loop transforms carry it along (_follow_allocation). A
        transformed (non-permutation) allocation domain is omitted: the cache's layout
        then follows its loop domain.
        """
        self._require_not_inlined("cache_after")
        uses = self.fusion.uses_of(self) if uses is None else list(uses)
        self._refuse_cat_use("cache_after", uses)
        cache, id_map = self._fresh_copy()
        order = self._mapped_allocation(id_map)
        if order is not None and order != cache.domain.logical:
            cache.domain.allocation = order
            cache.domain.contiguity = cache.domain.default_contiguity()
        LoadStoreOp(self.fusion, cache, self, kind=op_type, cache_op=cache_op)
        for e in uses:
            self.fusion.replace_input_of(e, self, cache)
        verify_around([self, cache])
        return cache

    def cache_before(self, op_type: str = "Set") -> TensorView:
        """Move `self`'s definition onto a new local tensor and make `self = set(cache)`.

        The cache takes `self`'s root, logical and loop domains (reduction axes, a
        permute's root, the transforms applied so far) because its definition produces
        them; `self` gets fresh ids without reduction axes, as nvFuser's cacheBefore. An
        allocation domain stays with `self`, mapped onto its new ids: it is the layout
        requested for `self`, not for the cache.
        """
        expr = self.definition
        if expr is None:
            raise ScheduleError(f"{self.short_name}: cache_before needs a tensor produced by an op")
        if len(expr.outputs) > 1:
            raise ScheduleError(f"{self.short_name}: cache_before of a multi-output op is not supported")
        self._require_not_inlined("cache_before")
        self._refuse_cat_use("cache_before", self.fusion.uses_of(self))
        old = self.domain
        src = [i for i in old.logical if not i.is_reduction]
        ids = [_copy_id(i) for i in src]
        id_map = dict(zip(src, ids))
        new_dom = TensorDomain(ids)
        order = self._mapped_allocation(id_map)
        if old.allocation is not None:
            if order is None:
                raise ScheduleError(
                    f"{self.short_name}: cache_before of a tensor whose allocation domain is "
                    "transformed is not supported"
                )
            new_dom.allocation = order
            new_dom.contiguity = [
                c for i, c in zip(old.allocation, old.contiguity) if not i.is_reduction
            ]
        cache = type(self)(
            self.fusion, TensorDomain(old.logical, root=old.root, loop=old.loop), self.dtype,
            MemoryType.Local,
        )
        expr.outputs = [cache if o is self else o for o in expr.outputs]
        cache.definition = expr
        self.definition = None
        self.fusion.changed()
        self.domain = new_dom
        LoadStoreOp(self.fusion, self, cache, kind=op_type)
        verify_around([self, cache])
        return cache

    def cache_fork(self) -> TensorView:
        """For an output that is also used inside the fusion: a copy becomes the output.

        `self` stays as the value its uses read (now local); the new tensor takes its
        place among the outputs, with `self`'s allocation domain mapped onto it.
        """
        if self not in self.fusion.outputs:
            raise ScheduleError(f"{self.short_name}: cache_fork needs a fusion output")
        if self in self.fusion.inputs:
            raise ScheduleError(f"{self.short_name}: cache_fork of a fusion input")
        if not self.fusion.uses_of(self):
            raise ScheduleError(f"{self.short_name}: cache_fork needs an output that is also used")
        self._require_not_inlined("cache_fork")
        fork, id_map = self._fresh_copy()
        order = self._mapped_allocation(id_map)
        if self.domain.allocation is not None:
            if order is None:
                raise ScheduleError(
                    f"{self.short_name}: cache_fork of a tensor whose allocation domain is "
                    "transformed is not supported"
                )
            fork.domain.allocation = order
            fork.domain.contiguity = [
                c for i, c in zip(self.domain.allocation, self.domain.contiguity)
                if not i.is_reduction
            ]
        LoadStoreOp(self.fusion, fork, self)
        self.fusion.replace_output(self, fork)
        self.domain.allocation = None
        self.domain.contiguity = self.domain.default_contiguity()
        self.memory_type = MemoryType.Local
        verify_around([self, fork])
        return fork

    # ---- rfactor -------------------------------------------------------------------------
    def rfactor(self, axes: Sequence[int]) -> TensorView:
        """Split this reduction in two (nvFuser's rFactor); returns the new producer.

        The producer reduces the loop axes in `axes` and keeps the other
        reduction-derived loop axes as iteration axes; its root is a copy of this
        tensor's logical domain and its logical domain replaces each reduction id by
        the ids this tensor's splits and merges made of it, all marked `rf`. This
        tensor then reduces what is left: its new logical domain is the producer's
        non-reduction logical domain, with the kept reduction-derived ids reduction
        again. At least one reduction loop axis must stay out of `axes`.

        A matmul or linear (its K split first) is rfactored into the partial products over
        the rfactored part of K and their sum (engine.ir.rfactor). The open FusionDefinition
        that owns this tensor is told of the new producer (`note_rfactor`), so that a saved
        file spells the call (`T3 = T2.rfactor(axes=[3])`) when no recorded call made it.
        """
        producer = rfactor(self, axes)
        fd = open_definition.get()
        note = getattr(fd, "note_rfactor", None)
        if note is not None and fd.fusion is self.fusion:
            note(producer)
        return producer


def _copy_id(i: IterDomain) -> IterDomain:
    return IterDomain(i.fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
