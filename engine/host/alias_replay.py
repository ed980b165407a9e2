"""Host steps whose outputs are views of their inputs, replayed without their ops.

A compiled fusion is specialised to its input signature, so a step of metadata ops (reshape,
permute, squeeze, broadcast, expand, a slice at constant bounds) gives outputs of the same
geometry over its inputs' buffers at every run. The first run of such a step is learnt: each
output's source input, sizes, strides and storage offset. Later runs rebuild the outputs with
one `as_strided` each, as nvFuser's runtime computes aliased outputs from sizes and strides
instead of running their ops, while an input of another geometry runs the step again.
An output with no elements holds no data: it is rebuilt as a fresh empty tensor of its
geometry, whatever computed it (a no-op segment's outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

# (input position, sizes, strides, storage offset from the input's); position EMPTY: a fresh
# tensor with no elements, its dtype and device in the offset's place.
_View = tuple[int, tuple[int, ...], tuple[int, ...], Any]
EMPTY = -1


class AliasReplay:
    def __init__(self, inputs: list[tuple[int, torch.Size, tuple[int, ...], int]], views: list[_View]) -> None:
        self.inputs = inputs  # (position, sizes, strides, storage offset) of the inputs read
        self.views = views

    @classmethod
    def learn(cls, args: Sequence[Any], outs: Sequence[Any]) -> AliasReplay | None:
        """The replay of a step that read `args` and gave `outs`; None unless every output is
        a view of a tensor input (same buffer, dtype and device) or has no elements."""
        sources = {}
        for k, x in enumerate(args):
            if isinstance(x, torch.Tensor) and x.numel():
                sources.setdefault((x.untyped_storage().data_ptr(), x.dtype, x.device), k)
        views: list[_View] = []
        for o in outs:
            if not isinstance(o, torch.Tensor):
                return None
            if not o.numel():
                views.append((EMPTY, tuple(o.shape), o.stride(), (o.dtype, o.device)))
                continue
            k = sources.get((o.untyped_storage().data_ptr(), o.dtype, o.device))
            if k is None:
                return None
            views.append((k, tuple(o.shape), o.stride(), o.storage_offset() - args[k].storage_offset()))
        used = sorted({k for k, *_ in views if k != EMPTY})
        return cls([(k, args[k].shape, args[k].stride(), args[k].storage_offset()) for k in used], views)

    def __call__(self, args: Sequence[Any]) -> list[torch.Tensor] | None:
        """The outputs for `args`, or None when an input read differs in geometry."""
        for k, shape, stride, _ in self.inputs:
            x = args[k]
            if x.shape != shape or x.stride() != stride:
                return None
        return [torch.empty_strided(size, stride, dtype=offset[0], device=offset[1]) if k == EMPTY
                else args[k].as_strided(size, stride, args[k].storage_offset() + offset)
                for k, size, stride, offset in self.views]
