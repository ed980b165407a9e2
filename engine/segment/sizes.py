"""Sizes at the example inputs: the complete fusion's free symbols bound from them, so that
the segmenter and the compile pipeline know any tensor's sizes and bytes, and have a stand-in
tensor for a segment's SchedulerRuntimeInfo, without running the fusion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.dtypes import DataType, to_torch
from engine.errors import ExecutionError
from engine.ir import exprs as ex
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.reference import Context, bind_input, check_extents


class Sizes:
    """Binds the complete fusion's free symbols from example inputs, so that any tensor's
    size, bytes and a stand-in torch tensor (for a segment's SchedulerRuntimeInfo) can be
    computed without running the fusion."""

    def __init__(self, fusion: Fusion, inputs: Sequence[Any]) -> None:
        if len(inputs) != len(fusion.inputs):
            raise ExecutionError(f"fusion takes {len(fusion.inputs)} inputs, got {len(inputs)}")
        ctx = Context(torch.device("meta"))
        self.given: dict[Val, Any] = {}
        for k, (val, x) in enumerate(zip(fusion.inputs, inputs)):
            # Sizes are all that binding needs: meta tensors, no copy of device data.
            meta = (torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
                    if isinstance(x, torch.Tensor) else x)
            bind_input(k, val, meta, ctx)
            self.given[val] = x
        check_extents(fusion, ctx.env)
        self.env = ctx.env
        self._fakes: dict[TensorView, torch.Tensor] = {}

    def value(self, s: Scalar) -> Any:
        return s.evaluate(self.env)

    def sizes(self, tv: TensorView) -> list[int]:
        out = []
        for i in tv.domain.logical:
            if i.is_reduction:
                continue
            out.append(int(self.value(i.expanded_extent if i.expanded_extent is not None else i.extent)))
        return out

    def stored_numel(self, tv: TensorView) -> int:
        """Elements a tensor occupies in memory: expanded broadcasts are stored once."""
        n = 1
        for i in tv.domain.logical:
            if i.is_reduction or i.is_broadcast:
                continue
            n *= int(self.value(i.extent))
        return n

    def bytes(self, tv: TensorView) -> int:
        return (self.stored_numel(tv) * tv.dtype.bits + 7) // 8

    def tensor(self, tv: TensorView) -> torch.Tensor:
        """The given input tensor, or a meta tensor (sizes and strides, no memory) with
        `tv`'s sizes and dtype, laid out as the engine allocates intermediates (allocation
        order, expanded broadcasts with stride 0). Only sizes, strides and alignment are
        read; an intermediate of a large fusion ([B, S, vocab] logits, a batched matmul's
        product) is not allocated to be asked about. Its address reads as 0: aligned, as
        the engine's own allocations are."""
        if tv in self.given:
            return self.given[tv]  # on its own device: only sizes, strides and alignment are read
        if tv in self._fakes:
            return self._fakes[tv]
        logical = [i for i in tv.domain.logical if not i.is_reduction]
        full = self.sizes(tv)
        stored = [1 if i.is_broadcast else s for i, s in zip(logical, full)]
        order = list(range(len(logical)))
        alloc = tv.domain.allocation
        if alloc is not None:
            try:
                order = [logical.index(i) for i in alloc if not i.is_reduction]
            except ValueError:
                order = list(range(len(logical)))
        mem_shape = [stored[d] for d in order]
        if tv.dtype == DataType.Float4_e2m1fn:
            mem_shape[-1] = max(1, mem_shape[-1] // 2)
            base = torch.empty(mem_shape, dtype=torch.uint8, device="meta").view(torch.float4_e2m1fn_x2)
        else:
            base = torch.empty(mem_shape, dtype=to_torch(tv.dtype), device="meta")
        skew = self._view_misalignment(tv, base.element_size())
        if skew:  # addresses `skew` elements past a 16-byte boundary, as the viewed input's
            base = torch.empty(base.numel() + skew, dtype=base.dtype, device="meta").as_strided(
                base.shape, base.stride(), skew)
        inv = [order.index(d) for d in range(len(order))]
        t = base.permute(inv) if order != list(range(len(order))) else base
        if stored != full:
            t = t.expand(full)
        self._fakes[tv] = t
        return t

    def _view_misalignment(self, tv: TensorView, itemsize: int) -> int:
        """Elements past a 16-byte boundary at which `tv` starts when the ops making it only
        view a given input (a reshape, permute, squeeze, broadcast or expand run as expr_eval
        returns the input's own buffer): the kernels reading it then see the input's address.
        A slice on the way starts anywhere: one element. 0 for the engine's own allocations."""
        sliced, x = False, tv
        while x not in self.given:
            e = x.definition
            if not isinstance(e, ex.ViewOp | ex.SqueezeOp | ex.BroadcastOp | ex.ExpandOp | ex.LoadStoreOp
                              | ex.SliceOp) or not isinstance(e.inputs[0], TensorView):
                return 0
            sliced = sliced or isinstance(e, ex.SliceOp)
            x = e.inputs[0]
        if sliced:
            return 1
        off = self.given[x].data_ptr() % 16 if self.given[x].numel() else 0
        return (off // itemsize) if off % itemsize == 0 else 1
