"""TensorDomain and TensorView, with the scheduling primitives that act on loop domains."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.dtypes import DataType
from engine.errors import ScheduleError
from engine.ir.base import Val
from engine.ir.iterdomain import IterDomain, Merge, ParallelType, Split
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
    axis, True/False, or None for broadcast and reduction axes.
    """

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
        if pos < self.compute_at_pos:
            raise ScheduleError(
                f"{self.short_name}: cannot {what} axis {pos} inside the compute-at "
                f"position {self.compute_at_pos}"
            )

    # ---- loop-domain transforms -------------------------------------------
    def split(self, axis: int, factor: ScalarLike, inner_split: bool = True) -> TensorView:
        pos = self._pos(axis)
        self._check_outside_ca(pos, "split")
        if isinstance(factor, int) and factor <= 0:
            raise ScheduleError(f"{self.short_name}: split factor must be positive, got {factor}")
        s = Split(self.domain.loop[pos], factor, inner_split)
        self.domain.loop[pos : pos + 1] = [s.outer, s.inner]
        return self

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
        m = Merge(outer, inner)
        loop = self.domain.loop
        lo = min(po, pi)
        rest = [d for k, d in enumerate(loop) if k not in (po, pi)]
        rest.insert(lo, m.out)
        self.domain.loop = rest
        return self

    def reorder(self, old2new: dict[int, int] | Sequence[int]) -> TensorView:
        """Move axes: {old: new} as nvFuser, or a full permutation list new[i] = old."""
        n = self.nloop
        if isinstance(old2new, dict):
            mapping = {self._pos(o): self._pos(w) for o, w in old2new.items()}
            if len(set(mapping.values())) != len(mapping):
                raise ScheduleError(f"{self.short_name}: reorder {old2new} repeats a target")
            new: list[IterDomain | None] = [None] * n
            for o, w in mapping.items():
                new[w] = self.domain.loop[o]
            rest = iter(d for k, d in enumerate(self.domain.loop) if k not in mapping)
            self.domain.loop = [d if d is not None else next(rest) for d in new]
        else:
            perm = [self._pos(p) for p in old2new]
            if sorted(perm) != list(range(n)):
                raise ScheduleError(f"{self.short_name}: reorder {list(old2new)} is not a permutation")
            self.domain.loop = [self.domain.loop[p] for p in perm]
        if self.compute_at_pos and any(
            self.domain.loop[k] is not d for k, d in enumerate(self._ca_ids)
        ):
            raise ScheduleError(f"{self.short_name}: reorder moves axes inside the compute-at position")
        return self

    @property
    def _ca_ids(self) -> list[IterDomain]:
        return self.domain.loop[: self.compute_at_pos]

    def parallelize(self, axis: int, parallel_type: ParallelType) -> TensorView:
        self.axis(axis).parallelize(parallel_type)
        return self

    def set_memory_type(self, memory_type: MemoryType) -> TensorView:
        self.memory_type = memory_type
        return self

    # ---- printing ----------------------------------------------------------
    def __str__(self) -> str:
        s = f"T{self.name}_{self.memory_type.value}_{self.dtype.cuda_name}{self.domain}"
        if self.compute_at_pos > 0:
            s += f" ca_pos( {self.compute_at_pos} )"
        if self.max_producer_pos > 0:
            s += f" produce_pos( {self.max_producer_pos} )"
        return s

    def __repr__(self) -> str:
        return f"<TensorView {self}>"
