"""Random fusion inputs: how a tensor is defined (symbolic or static extents, broadcast and
expanded axes, allocation order, contiguity) and a torch tensor laid out to match."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine import DataType
from engine.dtypes import to_torch
from tests.fuzz.choices import Chooser, choice, flip


@dataclass
class InputLayout:
    """define_tensor's arguments for one input, and the strides of the tensor that matches."""

    shape: list[int]  # define_tensor's shape: -1 symbolic, 1 broadcast, n static
    contiguity: list[bool | None]  # per allocation axis
    stride_order: list[int] | None
    sizes: list[int]
    strides: list[int]


def random_layout(ch: Chooser, sizes: list[int]) -> InputLayout:
    rank = len(sizes)
    shape, expanded = [], []
    for n in sizes:
        if n == 1:
            shape.append(1 if flip(ch, 0.7) else -1)
            expanded.append(False)
        else:
            exp = flip(ch, 0.06)
            shape.append(-1 if flip(ch, 0.8) else n)
            expanded.append(exp)
    order = list(range(rank))
    stride_order = None
    if rank > 1 and flip(ch, 0.3):
        rest = list(range(rank))
        order = [rest.pop(ch.int(0, len(rest) - 1)) for _ in range(rank)]
        stride_order = [0] * rank
        for pos, d in enumerate(order):
            stride_order[d] = rank - 1 - pos
    gap_at = ch.int(0, rank - 1) if rank and flip(ch, 0.15) else -1
    strides = [0] * rank
    contiguity: list[bool | None] = []
    running = 1
    for pos in reversed(range(rank)):
        d = order[pos]
        if expanded[d]:
            strides[d] = 0
            contiguity.append(None)
            continue
        if shape[d] == 1:
            strides[d] = running
            contiguity.append(None)
            continue
        contiguous = pos != gap_at
        strides[d] = running if contiguous else running + 1
        contiguity.append(contiguous)
        running = strides[d] * sizes[d]
    contiguity.reverse()
    return InputLayout(shape, contiguity, stride_order, list(sizes), strides)


def random_values(dtype: DataType, count: int, gen: torch.Generator) -> torch.Tensor:
    """`count` values of `dtype`: small integers, booleans, or floats in [-4, 4)."""
    if dtype.is_bool:
        return torch.randint(0, 2, (count,), generator=gen).bool()
    if dtype.is_integer:
        return torch.randint(-9, 10, (count,), generator=gen).to(to_torch(dtype))
    return (torch.rand(count, generator=gen) * 8 - 4).to(to_torch(dtype))


def make_tensor(layout: InputLayout, dtype: DataType, gen: torch.Generator) -> torch.Tensor:
    storage = 1 + sum((n - 1) * s for n, s in zip(layout.sizes, layout.strides))
    base = random_values(dtype, max(storage, 1), gen)
    return base.as_strided(layout.sizes, layout.strides)


def random_dtype(ch: Chooser) -> DataType:
    return choice(ch, [DataType.Float, DataType.Float, DataType.Float, DataType.BFloat16,
                       DataType.Half, DataType.Int32, DataType.Int, DataType.Bool])
