"""TensorDomain: the root, logical, allocation and loop views of a tensor's axes."""

from __future__ import annotations

from collections.abc import Sequence

from engine.ir.graph_copy import copy_node
from engine.ir.iterdomain import IterDomain


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
