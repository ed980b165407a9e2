"""Layouts at the fusion's edges: the user's input tensors checked against their definitions'
contiguity and stride order, and outputs given the strides of their allocation domains."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.dtypes import DataType
from engine.errors import ExecutionError
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.tensorview import TensorView


def check_input_layouts(fusion: Fusion, inputs: Sequence[Any]) -> None:
    """The user's input tensors against their definitions' contiguity and stride order
    (nvFuser's "Stride mismatch with contiguity info"): kernels may index a contiguous axis
    without its runtime stride and vectorize across contiguous axes, so a tensor laid out
    otherwise would be read wrongly. Only a fusion's own inputs: the tensors between
    segments are laid out by the engine and passed with their strides."""
    for k, (v, x) in enumerate(zip(fusion.inputs, inputs)):
        if isinstance(v, TensorView) and isinstance(x, torch.Tensor) and x.dim() == v.ndim:
            _check_layout(k, v, x)


def check_input_layout(tv: TensorView, x: torch.Tensor) -> None:
    """check_input_layouts for one input tensor `x` of `tv`."""
    _check_layout(0, tv, x)


def _check_layout(k: int, tv: TensorView, x: torch.Tensor) -> None:
    """nvFuser's rule, walking the allocation order from the innermost axis: a contiguous
    axis has the stride of the axes inside it, and every non-broadcast axis sets the stride
    the next one needs. More lenient on a contiguous axis of size 1, whose stride torch
    leaves free and no index ever multiplies: it is not checked and passes the expected
    stride on. Packed fp4 tensors and empty ones are not checked."""
    if tv.dtype == DataType.Float4_e2m1fn or x.numel() == 0:
        return
    dom = tv.domain
    pos = {i: d for d, i in enumerate(i for i in dom.logical if not i.is_reduction)}
    alloc = [(i, c) for i, c in zip(dom.maybe_allocation, dom.contiguity) if not i.is_reduction]
    if any(i not in pos for i, _ in alloc):
        return  # an allocation domain beyond a permutation of the logical one
    expected = 1
    for i, contiguous in reversed(alloc):
        d = pos[i]
        size, stride = x.shape[d], x.stride(d)
        if contiguous is None or (contiguous and size == 1):
            continue
        if contiguous and stride != expected:
            raise ExecutionError(
                f"input {k} ({tv.short_name}) axis {d} has stride {stride}, but its definition makes it "
                f"contiguous with the axes inside it (stride {expected}; strides {tuple(x.stride())}, "
                f"shape {tuple(x.shape)}): pass a tensor with that layout (.contiguous()), or define "
                "the input with its contiguity and stride_order"
            )
        expected = stride * size


def finish_output(v: Val, x: Any) -> Any:
    """Give an output the strides of its allocation domain; expanded broadcast axes stay
    expanded (stride 0), as nvFuser returns them."""
    if not isinstance(v, TensorView) or not isinstance(x, torch.Tensor):
        return x
    logical = [i for i in v.domain.logical if not i.is_reduction]
    expanded = [
        k for k, i in enumerate(logical)
        if i.expanded_extent is not None and k < x.dim() and x.stride(k) == 0 and x.shape[k] != 1
    ]
    if expanded:
        base = x
        for k in expanded:
            base = base.narrow(k, 0, 1)
        return _layout(v, base).expand(x.shape)
    return _layout(v, x)


def _layout(v: TensorView, x: torch.Tensor) -> torch.Tensor:
    dom = v.domain
    if dom.allocation is None:
        return x.contiguous() if not x.is_contiguous() else x
    logical = [i for i in dom.logical if not i.is_reduction]
    alloc = [i for i in dom.allocation if not i.is_reduction]
    try:
        perm = [logical.index(i) for i in alloc]
    except ValueError:
        return x.contiguous()  # an allocation domain transformed beyond a permutation
    out = x.permute(perm).contiguous().permute(_inverse(perm))
    return out


def _inverse(perm: list[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv
