"""The arguments of define_tensor (and add_output's stride_order) in the frontends' forms:
shape and contiguity per allocation axis, stride_order as ranks of strides, the 2022
frontend's sizes and strides; each checked, with messages that quote a value cut to a
readable length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.errors import FusionDefinitionError

# Sizes and integer scalars are int64 in generated code (nvfuser_index_t).
INDEX_MAX = (1 << 63) - 1


def short_repr(value: Any) -> str:
    """repr(value), cut to a readable length (a hostile file may hold huge literals)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def from_sizes_strides(
    sizes: Sequence[int] | None, strides: Sequence[int] | None, static_sizes: bool
) -> tuple[list[int], list[bool | None], list[int] | None]:
    """shape, contiguity (per allocation axis) and stride_order for the 2022 frontend's
    define_tensor(sizes=t.size(), strides=t.stride()): size-1 and stride-0 axes are
    broadcasts, other sizes symbolic unless static_sizes."""
    sizes, strides = list(sizes or []), list(strides or [])
    if len(sizes) != len(strides) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                             for x in (*sizes, *strides)):
        raise FusionDefinitionError(f"define_tensor: sizes {short_repr(sizes)} and strides {short_repr(strides)} must "
                                    "be equally long lists of integers >= 0")
    rank = len(sizes)
    shape = [s if static_sizes or s == 1 else -1 for s in sizes]
    # Outermost first: larger strides outside; ties keep the logical order.
    order = sorted(range(rank), key=lambda d: -strides[d])
    contiguity: list[bool | None] = [None] * rank
    inner = 1  # stride an axis must have to be contiguous with the non-broadcast axis inside it
    for pos in reversed(range(rank)):
        d = order[pos]
        if sizes[d] == 1 or strides[d] == 0:
            continue
        contiguity[pos] = strides[d] == inner
        inner = strides[d] * sizes[d]
    stride_order = None if order == list(range(rank)) else [rank - 1 - order.index(d) for d in range(rank)]
    return shape, contiguity, stride_order


def check_stride_order(op: str, stride_order: Any, rank: int) -> list[int]:
    so = list(stride_order) if isinstance(stride_order, (list, tuple)) else None
    if so is None or any(isinstance(x, bool) or not isinstance(x, int) for x in so) or sorted(so) != list(range(rank)):
        raise FusionDefinitionError(f"{op}: stride_order {short_repr(stride_order)} must be a permutation of "
                                    f"0..{rank - 1}")
    return so


def allocation_order(shape: list[int], stride_order: Sequence[int] | None) -> list[int]:
    """Logical dims from outermost to innermost in memory."""
    rank = len(shape)
    if not stride_order:
        return list(range(rank))
    so = list(stride_order)
    if len(so) != rank or sorted(so) != list(range(rank)):
        raise FusionDefinitionError(
            f"define_tensor: stride_order {so} must be a permutation of 0..{rank - 1}"
        )
    order = [0] * rank
    for d, rank_of_stride in enumerate(so):
        order[rank - 1 - rank_of_stride] = d
    return order


def allocation_contiguity(shape: list[int], contiguity: Any, order: list[int]) -> list[bool | None]:
    rank = len(shape)
    if contiguity is None or isinstance(contiguity, bool):
        fill = True if contiguity is None else contiguity
        return [None if shape[d] == 1 else fill for d in order]
    c = list(contiguity)
    if len(c) != rank:
        raise FusionDefinitionError(
            f"define_tensor: contiguity {c} has {len(c)} entries for rank {rank}"
        )
    for x in c:
        if x is not None and not isinstance(x, bool):
            raise FusionDefinitionError(f"define_tensor: contiguity entries must be bool or None, got {x!r}")
    return c
