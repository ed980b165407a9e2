"""Where and how a TensorView is stored: its memory type (MemoryType, defined in
tensorview_base), circular buffering of a shared-memory cache, and the allocation domain
(the memory layout), which loop transforms carry along."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.errors import ScheduleError
from engine.ir.iterdomain import IdTransform, IterDomain, Merge, Split
from engine.ir.tensorview_base import MemoryType
from engine.ir.transactions import transaction
from engine.ir.verify import allocation_error

if TYPE_CHECKING:
    from engine.ir.tensorview import TensorView


class MemoryMixin:
    """The memory primitives of TensorView (which inherits them)."""

    # ---- memory type -------------------------------------------------------------------
    def circular_buffer(self, stages: int) -> TensorView:
        """Load this shared-memory cache of a global tensor `stages` - 1 stages ahead of its
        use (cp.async), so that loads overlap computation (nvFuser's circularBuffer). Its axis
        right of the compute-at position, `stages` long, holds the stages; every consumer must
        iterate it as its next loop (lowering checks, and says so where it is not)."""
        if not isinstance(stages, int) or isinstance(stages, bool) or stages < 2:
            raise ScheduleError(f"{self.short_name}: circular buffering needs 2 or more stages, got {stages!r}")
        if self.memory_type != MemoryType.Shared:
            raise ScheduleError(f"{self.short_name}: only a shared-memory cache can be circular-buffered "
                                f"(it is in {self.memory_type.name} memory)")
        self.circular_buffer_depth = stages
        return self

    def set_memory_type(self, memory_type: MemoryType) -> TensorView:
        if not isinstance(memory_type, MemoryType):
            raise ScheduleError(f"{self.short_name}: expected a MemoryType, got {memory_type!r}")
        if memory_type != MemoryType.Global and (
            self in self.fusion.inputs or self in self.fusion.outputs
        ):
            raise ScheduleError(f"{self.short_name}: fusion inputs and outputs live in global memory")
        self.memory_type = memory_type
        return self

    # ---- allocation domain -----------------------------------------------------------
    def set_allocation_domain(
        self, ids: Sequence[IterDomain], contiguity: bool | Sequence[bool | None] = True
    ) -> TensorView:
        """Set the memory layout: `ids` must cover the logical domain exactly once
        (a permutation of it, or ids derived from it by this tensor's transforms); a
        local or shared tensor may leave out its loop ids left of ca_pos, which are
        not allocated (engine.ir.verify.allocation_error)."""
        ids = list(ids)
        why = allocation_error(self, ids)
        if why is not None:
            raise ScheduleError(f"{self.short_name}: allocation domain is invalid: {why}")
        if isinstance(contiguity, bool):
            contig: list[bool | None] = [
                None if (i.is_broadcast or i.is_reduction) else contiguity for i in ids
            ]
        else:
            contig = list(contiguity)
            if len(contig) != len(ids):
                raise ScheduleError(
                    f"{self.short_name}: contiguity has {len(contig)} entries for {len(ids)} axes"
                )
            for i, c in zip(ids, contig):
                if i.is_broadcast and c is not None:
                    raise ScheduleError(f"{self.short_name}: contiguity of broadcast {i} must be None")
                if not (i.is_broadcast or i.is_reduction) and not isinstance(c, bool):
                    raise ScheduleError(f"{self.short_name}: contiguity of {i} must be True or False")
        with transaction([self]):
            self.domain.allocation = ids
            self.domain.contiguity = contig
        return self

    def set_allocation_as_loop(self) -> TensorView:
        return self.set_allocation_domain(self.domain.loop, True)

    def _follow_allocation(self, t: IdTransform) -> None:
        """Transform a set allocation domain along with the loop domain (seed 001).

        A cache whose allocation domain still names an id that the loop domain split
        (seed 001's T7: allocation (iS21, bS20, iB22) under a loop that split iS21
        three times) has a layout that no loop position can allocate from. So a split
        of an allocation id replaces it, in place, by its outer and inner ids; a merge
        of two ids adjacent in the allocation (outer first) replaces them by the merged
        id. Other merges leave the allocation as it is: it still covers the logical
        domain, only not in the loop's terms. Reorders never touch it (memory order is
        not iteration order), and a tensor without an allocation domain gets none.
        Fusion inputs and outputs are left alone: their allocation domain is the
        layout of the caller's tensor or the one requested for the result, which no
        loop schedule changes.
        """
        dom = self.domain
        alloc = dom.allocation
        if alloc is None or self in self.fusion.inputs or self in self.fusion.outputs:
            return
        if isinstance(t, Split) and t.in_id in alloc:
            k = alloc.index(t.in_id)
            c = dom.contiguity[k]
            # Within a split the inner part is dense; the outer keeps the old stride's fate.
            ci: bool | None = None if c is None else True
            dom.allocation = alloc[:k] + [t.outer, t.inner] + alloc[k + 1 :]
            dom.contiguity = dom.contiguity[:k] + [c, ci] + dom.contiguity[k + 1 :]
        elif isinstance(t, Merge) and t.outer in alloc and t.inner in alloc:
            k = alloc.index(t.outer)
            if k + 1 >= len(alloc) or alloc[k + 1] is not t.inner:
                return
            co, cin = dom.contiguity[k], dom.contiguity[k + 1]
            out = t.out
            if out.is_broadcast or out.is_reduction:
                c = None
            elif t.outer.is_broadcast:
                c = cin
            elif t.inner.is_broadcast:
                c = co
            elif co is True:
                c = cin
            else:
                return  # a non-contiguous outer cannot fold into one stride
            dom.allocation = alloc[:k] + [out] + alloc[k + 2 :]
            dom.contiguity = dom.contiguity[:k] + [c] + dom.contiguity[k + 2 :]
