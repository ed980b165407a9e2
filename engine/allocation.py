"""Tensors the engine allocates for a fusion's tensors: memory in allocation order viewed in
logical order (fp4 packed two values a byte), the layout op's padded buffer zero-filled, and
the strides of a tensor's allocation ids in the tensor that holds it.
"""

from __future__ import annotations

import math

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import ExecutionError
from engine.ir.tensorview import TensorView


def _logical_sizes(tv: TensorView, env: dict) -> list[int]:
    out = []
    for i in tv.domain.logical:
        if i.is_reduction:
            continue
        e = i.expanded_extent if i.expanded_extent is not None else i.extent
        out.append(int(e.evaluate(env)))
    return out


def _alloc_perm(tv: TensorView) -> list[int] | None:
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    alloc = [i for i in tv.domain.maybe_allocation if not i.is_reduction]
    try:
        return [logical.index(i) for i in alloc]
    except ValueError:
        return None


def allocate(tv: TensorView, env: dict, device: torch.device) -> torch.Tensor:
    """An engine-allocated tensor: memory in allocation order, viewed in logical order.

    An allocation domain transformed beyond a permutation (a swizzle) gets contiguous
    logical storage of the same size, which the kernel fills in allocation order, as the
    reference evaluator returns such tensors. fp4 packs two values per byte along the
    contiguous innermost axis.
    """
    sizes = _logical_sizes(tv, env)
    dtype = to_torch(tv.dtype)
    perm = _alloc_perm(tv)
    packed = tv.dtype == DataType.Float4_e2m1fn
    if perm is None:
        if is_padded(tv, env):
            # A padded allocation (the layout op's): the buffer itself, padding zeroed, as the
            # reference returns it.
            return torch.zeros(_alloc_extents(tv, env), dtype=dtype, device=device)
        if packed:
            sizes = sizes[:-1] + [sizes[-1] // 2]
        return torch.empty(sizes, dtype=dtype, device=device)
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    base_sizes = [1 if logical[p].is_broadcast else sizes[p] for p in perm]
    if packed and base_sizes:
        base_sizes[-1] //= 2
        sizes = list(sizes)
        sizes[perm[-1]] //= 2
    base = torch.empty(base_sizes, dtype=dtype, device=device)
    inv = [perm.index(k) for k in range(len(perm))]
    return base.permute(inv).expand(sizes) if sizes else base


def is_padded(tv: TensorView, env: dict) -> bool:
    """True when `tv`'s allocation (transformed beyond a permutation) holds more elements
    than its logical sizes: the layout op's padded buffer, which `allocate` zero-fills."""
    if _alloc_perm(tv) is not None:
        return False
    return math.prod(_alloc_extents(tv, env)) != math.prod(_logical_sizes(tv, env))


def _alloc_extents(tv: TensorView, env: dict) -> list[int]:
    alloc = [i for i in tv.domain.maybe_allocation if not i.is_reduction]
    return [int((i.expanded_extent or i.extent).evaluate(env)) for i in alloc]


def alloc_strides(tv: TensorView, t: torch.Tensor, env: dict | None = None) -> list[int]:
    """Strides (elements) of `tv`'s allocation ids for the tensor `t` that holds it."""
    perm = _alloc_perm(tv)
    if perm is not None:
        return [t.stride(p) for p in perm]
    if env is None or not t.is_contiguous():
        raise ExecutionError(f"{tv.short_name}: a transformed allocation domain needs an engine-allocated tensor")
    extents = _alloc_extents(tv, env)
    strides = [1] * len(extents)
    for k in range(len(extents) - 2, -1, -1):
        strides[k] = strides[k + 1] * extents[k + 1]
    return strides
