"""TensorDomain and TensorView, with the scheduling primitives.

Every primitive leaves a valid tensor or refuses with ScheduleError and changes
nothing: cheap checks come first, and the mutation itself runs in a transaction
that verifies the tensors it touched (engine.ir.verify) and restores them when
the verifier refuses.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from engine.dtypes import DataType
from engine.errors import FusionDefinitionError, ScheduleError
from engine.ir.base import Expr, Val
from engine.ir.device_mesh import DeviceMesh
from engine.ir.exprs import CatOp, LoadStoreOp
from engine.ir.graph_copy import copy_node
from engine.ir.iterdomain import (
    IdTransform,
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

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion


class MemoryType(enum.Enum):
    Global = "g"
    Local = "l"
    Shared = "s"

    # nvFuser's python names (`global` is a Python keyword: getattr(MemoryType, "global") works)
    local = "l"
    shared = "s"


setattr(MemoryType, "global", MemoryType.Global)


class TensorDomain:
    """The four views of a tensor's axes.

    root: before any rfactor (reshape, resize) transform; None when equal to logical.
    logical: the tensor's shape. allocation: memory order; None when equal to logical.
    loop: what code iterates, after scheduling. contiguity: one entry per allocation
    axis, True/False, or None for broadcast and reduction axes. loop_only: broadcast ids
    added to the loop domain alone (TensorView.broadcast_loop), derived from nothing: a
    loop that a consumer runs and this tensor does not have (nvFuser's
    TensorDomain::broadcast).
    """

    __deepcopy__ = copy_node

    def __init__(
        self,
        logical: Sequence[IterDomain],
        *,
        root: Sequence[IterDomain] | None = None,
        allocation: Sequence[IterDomain] | None = None,
        loop: Sequence[IterDomain] | None = None,
        contiguity: Sequence[bool | None] | None = None,
    ) -> None:
        self.logical = list(logical)
        self.root = list(root) if root is not None else None
        self.allocation = list(allocation) if allocation is not None else None
        self.loop = list(loop) if loop is not None else list(self.logical)
        self.contiguity = self.default_contiguity() if contiguity is None else list(contiguity)
        self.loop_only: list[IterDomain] = []

    @property
    def maybe_root(self) -> list[IterDomain]:
        return self.root if self.root is not None else self.logical

    @property
    def maybe_allocation(self) -> list[IterDomain]:
        return self.allocation if self.allocation is not None else self.logical

    @property
    def has_root(self) -> bool:
        return self.root is not None

    @property
    def has_allocation(self) -> bool:
        return self.allocation is not None

    def default_contiguity(self, fill: bool = True) -> list[bool | None]:
        return [
            None if (i.is_broadcast or i.is_reduction) else fill for i in self.maybe_allocation
        ]

    def __str__(self) -> str:
        return "[" + ", ".join(str(i) for i in self.loop) + "]"


def _definition_ops(tv: TensorView, method: str) -> Any:
    """The `fd.ops` of the open FusionDefinition that owns `tv`, so that the call is recorded
    as the op (a saved file then spells it fd.ops.size / fd.ops.shape)."""
    from engine.frontend.definition import open_definition

    fd = open_definition()
    if fd is None or fd.fusion is not tv.fusion:
        raise FusionDefinitionError(f"{tv.short_name}.{method}(): only inside the `with FusionDefinition()` "
                                    "block that defines the tensor")
    return fd.ops


class TensorView(Val):
    """A tensor in the fusion: T0, T1, ... in creation order."""

    def __init__(
        self,
        fusion: Fusion,
        domain: TensorDomain,
        dtype: DataType,
        memory_type: MemoryType = MemoryType.Local,
    ) -> None:
        super().__init__()
        self.fusion = fusion
        self.name = fusion.new_tv_name()
        self.domain = domain
        self.dtype = dtype
        self.memory_type = memory_type
        self.compute_at_pos = 0
        self.max_producer_pos = 0
        # Stages of a shared-memory cache that lowering loads ahead of their use (circular_buffer).
        self.circular_buffer_depth = 0
        # Bytes that this global input's vector loads prefetch into L2 (0: no hint); a
        # scheduler's choice for inputs read in short rows (engine-only: nvFuser has no such hint).
        self.l2_prefetch = 0
        # Whether this global input's vector loads keep their L2 lines ahead of others
        # (evict_last); set for inputs larger than L2 that a kernel streams through once.
        self.l2_evict_last = False
        # The devices this tensor lives on (engine.multidevice.DeviceMesh); None: one device.
        self.device_mesh: DeviceMesh | None = None
        fusion.register_val(self)

    # ---- shape -------------------------------------------------------------
    @property
    def short_name(self) -> str:
        return f"T{self.name}"

    @property
    def ndim(self) -> int:
        """Rank of the logical domain, without reduction axes (nvFuser's ndim)."""
        return len([i for i in self.domain.logical if not i.is_reduction])

    @property
    def nloop(self) -> int:
        return len(self.domain.loop)

    def size(self, dim: int) -> Any:
        """nvFuser's Tensor.size(dim): fd.ops.size of the FusionDefinition being written."""
        return _definition_ops(self, "size").size(self, dim)

    def shape(self) -> Any:
        """nvFuser's Tensor.shape(): fd.ops.shape of the FusionDefinition being written."""
        return _definition_ops(self, "shape").shape(self)

    def logical(self) -> list[IterDomain]:
        return self.domain.logical

    def loop(self) -> list[IterDomain]:
        return self.domain.loop

    def axis(self, i: int) -> IterDomain:
        return self.domain.loop[self._pos(i)]

    def _pos(self, i: int, n: int | None = None) -> int:
        n = self.nloop if n is None else n
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ScheduleError(f"{self.short_name}: axis {i} is out of range for {n} loop axes")
        return j

    def _check_outside_ca(self, pos: int, what: str) -> None:
        # Loop ids left of ca_pos are shared with consumers and those left of
        # produce_pos with producers: changing them would break the inlining.
        fixed = max(self.compute_at_pos, self.max_producer_pos)
        if pos < fixed:
            raise ScheduleError(
                f"{self.short_name}: cannot {what} axis {pos} inside the inlined positions "
                f"(ca_pos {self.compute_at_pos}, produce_pos {self.max_producer_pos})"
            )

    # ---- loop-domain transforms -------------------------------------------
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

    # ---- devices ---------------------------------------------------------------------------
    def set_device_mesh(self, mesh: Any) -> TensorView:
        """Place the tensor on the devices of `mesh` (an engine.multidevice.DeviceMesh)."""
        if not isinstance(mesh, DeviceMesh):
            raise ScheduleError(f"{self.short_name}.set_device_mesh: expected a DeviceMesh, got {mesh!r}")
        self.device_mesh = mesh
        return self

    def has_device_mesh(self) -> bool:
        return self.device_mesh is not None

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
        from engine.ir.verify import allocation_error

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

    # ---- inlining -------------------------------------------------------------------
    def inline_at(self, pos: int = -1, best_effort: bool = False) -> TensorView:
        """Compute this tensor inside its consumers' first `pos` loops (ca_pos).

        Legal positions: this tensor's first `pos` loop ids contain no reduction or
        vectorized id and each maps (logical map plus matching transforms) to the
        consumer's loop id at the same position, for every consumer, and no loop they
        join holds both a reduction over it and a reader of its result. A fusion input
        is never inlined. With best_effort the position is lowered to the largest
        legal one; otherwise an illegal position raises ScheduleError.
        """
        from engine.ir.verify import max_inline_position, reduction_read_in_its_loop

        n = self.nloop
        p = pos + n + 1 if pos < 0 else pos
        if not 0 <= p <= n:
            raise ScheduleError(f"{self.short_name}: inline position {pos} is outside 0..{n}")
        legal = max_inline_position(self)
        if p > legal:
            if not best_effort:
                why = reduction_read_in_its_loop(self, legal)
                raise ScheduleError(
                    f"{self.short_name}: cannot inline at position {p}; the largest legal "
                    f"position is {legal}" + (f" ({why})" if why else "")
                )
            p = legal
        self._set_ca(p)
        return self

    def inline_most(self) -> TensorView:
        return self.inline_at(-1, best_effort=True)

    def compute_at(self, consumer: TensorView, pos: int = -1, best_effort: bool = False) -> TensorView:
        """Replay `consumer`'s loop transforms onto this producer, then inline at `pos`."""
        from engine.analysis.logical_map import consumers_of

        if consumer not in consumers_of(self):
            raise ScheduleError(f"{self.short_name}: {consumer.short_name} is not a direct consumer")
        # The replay rewrites this tensor's whole loop domain.
        self._require_not_inlined("compute_at")
        # Setting ca_pos raises the consumers' produce_pos: they are part of the change.
        from engine.ir.propagate import replay_edge

        with transaction([self, *consumers_of(self)]):
            replay_edge(consumer, self)
            self.inline_at(pos if pos >= 0 else consumer.nloop + 1 + pos, best_effort)
        return self

    def _set_ca(self, pos: int) -> None:
        from engine.analysis.logical_map import consumers_of, producers_of

        self.compute_at_pos = pos
        for c in consumers_of(self):
            c.max_producer_pos = max((p.compute_at_pos for p in producers_of(c)), default=0)

    # ---- caches -----------------------------------------------------------------------
    def _require_not_inlined(self, what: str) -> None:
        if self.compute_at_pos or self.max_producer_pos:
            raise ScheduleError(
                f"{self.short_name}: {what} must come before inlining "
                f"(ca_pos {self.compute_at_pos}, produce_pos {self.max_producer_pos})"
            )

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
        tv = TensorView(self.fusion, TensorDomain(ids), self.dtype, MemoryType.Local)
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

    def cache_after(self, cache_op: str = "Unspecified", op_type: str = "Set") -> TensorView:
        """Insert `cache = set(self)` and make every use of `self` read the cache.

        The cache's allocation domain is derived, not copied (seed 001): when `self`
        has an allocation domain that is a permutation of its logical domain, the cache
        gets the same order over its own ids with fresh contiguity (a cache is dense),
        and from then on loop transforms carry it along (_follow_allocation). A
        transformed (non-permutation) allocation domain is omitted: the cache's layout
        then follows its loop domain.
        """
        self._require_not_inlined("cache_after")
        uses = self.fusion.uses_of(self)
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
        cache = TensorView(
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
        """
        from engine.ir.rfactor import rfactor

        return rfactor(self, axes)

    # ---- printing ----------------------------------------------------------
    def __str__(self) -> str:
        s = f"T{self.name}_{self.memory_type._value_}_{self.dtype.cuda_name}{self.domain}"
        if self.compute_at_pos > 0:
            s += f" ca_pos( {self.compute_at_pos} )"
        if self.max_producer_pos > 0:
            s += f" produce_pos( {self.max_producer_pos} )"
        mesh = self.__dict__.get("device_mesh")
        if mesh is not None:
            s += f" ({mesh})"
        return s

    def __repr__(self) -> str:
        return f"<TensorView {self}>"


# ---- transactions: validate by trying, restore on refusal ------------------------------------

def _domain_ids(tv: TensorView) -> list[IterDomain]:
    from engine.analysis.replay import transforms_between

    dom = tv.domain
    ends = [*dom.loop, *dom.maybe_allocation, *dom.logical]
    ids: dict[IterDomain, None] = dict.fromkeys([*dom.maybe_root, *ends])
    for t in transforms_between(dom.maybe_root, ends):
        ids.update(dict.fromkeys([*t.inputs, *t.outputs]))
    return list(ids)


class _Snapshot:
    """What a primitive may change on one tensor, to put back when it is refused."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv
        self.domain = tv.domain
        dom = tv.domain
        self.loop = list(dom.loop)
        self.allocation = None if dom.allocation is None else list(dom.allocation)
        self.contiguity = list(dom.contiguity)
        self.loop_only = list(dom.loop_only)
        self.ca = tv.compute_at_pos
        self.mpp = tv.max_producer_pos
        self.memory_type = tv.memory_type
        ids = _domain_ids(tv)
        self.parallel = {i: i.parallel_type for i in ids}
        # Transforms link themselves into their inputs' `uses`; a refused primitive's
        # transforms are unlinked again so that forward walks never see them.
        self.nuses = {i: len(i.uses) for i in ids}

    def restore(self) -> None:
        tv = self.tv
        tv.domain = self.domain
        tv.domain.loop = self.loop
        tv.domain.allocation = self.allocation
        tv.domain.contiguity = self.contiguity
        tv.domain.loop_only = self.loop_only
        tv.compute_at_pos = self.ca
        tv.max_producer_pos = self.mpp
        tv.memory_type = self.memory_type
        for i, p in self.parallel.items():
            i.parallel_type = p
        for i, n in self.nuses.items():
            del i.uses[n:]


class _PositionSnapshot:
    """What inlining may change on one tensor (its compute-at and produce positions), to
    put back when it is refused."""

    def __init__(self, tv: TensorView) -> None:
        self.tv = tv
        self.ca = tv.compute_at_pos
        self.mpp = tv.max_producer_pos

    def restore(self) -> None:
        self.tv.compute_at_pos = self.ca
        self.tv.max_producer_pos = self.mpp


# Tensors whose loop-domain edits wait for one verification (see loop_edits_trusted).
_unverified: dict[TensorView, None] | None = None


@contextlib.contextmanager
def loop_edits_trusted() -> Iterator[None]:
    """Verify the loop-domain edits (split, merge, reorder, parallelize) made inside once, at
    the end, instead of after each edit with a snapshot to roll back to.

    For the engine's own schedulers, which make hundreds of such edits per fusion and never
    recover from a refused one: a user's schedule keeps the per-edit check, whose rollback
    leaves the session usable after a refused edit. Other primitives (cache, rfactor,
    compute_at) are verified as they happen even inside.
    """
    global _unverified
    if _unverified is not None:
        yield
        return
    _unverified = {}
    try:
        yield
        touched = list(_unverified)
    finally:
        _unverified = None
    verify_around(touched)


# Tensors whose verification waits for the end of a trial (see verification_deferred).
_deferred: dict[TensorView, None] | None = None


@contextlib.contextmanager
def verification_deferred() -> Iterator[None]:
    """Inside, transactions neither verify nor keep anything to roll back to: the tensors
    each one would verify (its own and their producers and consumers) are verified once,
    at the end, which raises what that verification raises.

    For a trial schedule on a copy that is thrown away if anything fails: a caller that
    needs the error of a failed trial repeats it on a new copy with every step verified
    (reshape_schedule_reason). The schedules tried this way edit loop domains, parallel
    types and positions, which no later step undoes: the state that the verification at
    the end sees is one that every step's verification would have passed through."""
    global _deferred
    if _deferred is not None:
        yield
        return
    _deferred = {}
    try:
        yield
        pending = list(_deferred)
    finally:
        _deferred = None
    _verify_all(pending)


def transactions_roll_back() -> bool:
    """Whether a refused transaction puts its tensors back (not inside verification_deferred)."""
    return _deferred is None


@contextlib.contextmanager
def transaction(tvs: Sequence[TensorView], loop_edit: bool = False,
                inlining: bool = False, verified_inside: bool = False) -> Iterator[None]:
    """Run a mutation of `tvs`, then verify them and their neighbours; on ScheduleError
    (from the mutation or the verifier) put every tensor back and re-raise. `inlining`:
    the mutation only sets compute-at positions, so only those are kept to put back, and
    legal positions are computed once (see only_positions_change). `verified_inside`: the
    mutation ends with a transaction of its own over the same tensors, whose verification
    of the final state is this one's (verify is a pure check): only the rollback is kept."""
    from engine.analysis.logical_map import consumers_of, producers_of
    from engine.ir.verify import only_positions_change

    if _deferred is not None:
        with only_positions_change() if inlining else contextlib.nullcontext():
            yield
        for t in tvs:
            _deferred[t] = None
            _deferred.update(dict.fromkeys(producers_of(t)))
            _deferred.update(dict.fromkeys(consumers_of(t)))
        return
    if loop_edit and _unverified is not None:
        yield
        _unverified.update(dict.fromkeys(tvs))
        return
    snaps: list[_Snapshot] | list[_PositionSnapshot]
    if inlining:
        snaps, scope = [_PositionSnapshot(t) for t in tvs], only_positions_change()
    else:
        snaps, scope = [_Snapshot(t) for t in tvs], contextlib.nullcontext()
    # Inside loop_edits_trusted: the tensors whose edits still wait for the check at its
    # end, as they are now, to put back if this transaction is undone (see below).
    waiting = dict(_unverified) if _unverified is not None else None
    with scope:
        try:
            yield
            if verified_inside:
                return
            check: dict[TensorView, None] = {}
            for t in tvs:
                check[t] = None
                check.update(dict.fromkeys(producers_of(t)))
                check.update(dict.fromkeys(consumers_of(t)))
            _verify_all(check)
            if _unverified is not None:
                # Verified as they are now, loop edits included: the check at the end of
                # loop_edits_trusted would repeat it unless an edit comes after (which
                # lists the tensor again). Most schedules end with inline_most, whose
                # transaction verifies every tensor.
                for t in check:
                    _unverified.pop(t, None)
        except ScheduleError:
            for s in reversed(snaps):
                s.restore()
            if waiting is not None and _unverified is not None:
                # Undone: what a nested transaction verified is no longer the state.
                _unverified.update(waiting)
            raise


def verify_around(tvs: Sequence[TensorView]) -> None:
    from engine.analysis.logical_map import consumers_of, producers_of

    # Each tensor once, in first-seen order: verify is a pure check, so the first
    # failure (the error raised) is the one checking every occurrence would find.
    check: dict[TensorView, None] = {}
    for t in tvs:
        check.update(dict.fromkeys([t, *producers_of(t), *consumers_of(t)]))
    _verify_all(check)


def _verify_all(tvs: Iterable[TensorView]) -> None:
    """verify each of `tvs`; nothing changes meanwhile, so loop maps (every consumer's,
    for each tensor's inline position) are computed once per pair."""
    from engine.analysis.replay import loop_maps_frozen
    from engine.ir.verify import verify

    with loop_maps_frozen():
        for t in tvs:
            verify(t)


def _copy_id(i: IterDomain) -> IterDomain:
    return IterDomain(i.fusion, i.extent, i.iter_type, expanded_extent=i.expanded_extent)
