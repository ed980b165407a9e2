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
from engine.reference import HANDLERS, Context, bind_input, check_extents


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
        # Tensors stood in for by the view of a given input that host ops make of it (their
        # strides and address): a run passes that view to the kernels that read it, uncopied.
        self.viewed: set[str] = set()

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
        view = self._host_view(tv)
        if view is not None:
            self.viewed.add(tv.short_name)
            self._fakes[tv] = view
            return view
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
        inv = [order.index(d) for d in range(len(order))]
        t = base.permute(inv) if order != list(range(len(order))) else base
        if stored != full:
            t = t.expand(full)
        self._fakes[tv] = t
        return t

    def _host_view(self, tv: TensorView) -> torch.Tensor | None:
        """The view of a given input that `tv` is, when the ops making it only view that input
        (a reshape, permute, slice, squeeze, broadcast or expand, run as host ops that return
        the input's own buffer) and its innermost axis is read in order (stride 1, or one
        element), or all its axes lie in logical order (in_logical_order: a row-major layout
        with gaps, where a slice or a split skips elements): the same torch
        ops on a meta tensor of the input's sizes, strides and address within 16 bytes give
        its strides and address. Otherwise None: the engine lays the tensor out as it
        allocates one."""
        chain: list[ex.Expr] = []
        x: Val = tv
        while x not in self.given:
            e = x.definition
            if (not isinstance(e, _HOST_VIEWS) or not isinstance(e.inputs[0], TensorView)
                    or any(isinstance(v, TensorView) for v in e.inputs[1:])):
                return None
            chain.append(e)
            x = e.inputs[0]
        given = self.given[x]
        if not chain or not isinstance(given, torch.Tensor):
            return None
        item = given.element_size()
        skew = (given.data_ptr() % 16) // item if given.data_ptr() % item == 0 else 0
        span = 1 + sum((n - 1) * st for n, st in zip(given.shape, given.stride()) if n > 0)
        t = torch.empty(span + skew, dtype=given.dtype, device="meta").as_strided(
            given.shape, given.stride(), skew)
        ctx = Context(torch.device("meta"))
        ctx.env.update(self.env)
        for e in reversed(chain):
            args = [t, *(ctx.scalar(v) if isinstance(v, Scalar) else v for v in e.inputs[1:])]
            t = HANDLERS[type(e)](e, args, ctx)[0]
        inner_in_order = not t.dim() or t.shape[-1] <= 1 or t.stride(-1) == 1
        return t if inner_in_order or in_logical_order(t) else None


def in_logical_order(t: torch.Tensor) -> bool:
    """Whether every axis of `t` steps over all the axes inside it (axes of one element and
    expanded ones aside): a row-major layout, dense or with gaps (the innermost stride may
    exceed 1). A kernel reads such a view at its strides as it reads a dense tensor; a
    permuted one would be read against its layout."""
    span = 1
    for n, st in reversed(list(zip(t.shape, t.stride()))):
        if n == 1 or st == 0:
            continue
        if st < span:
            return False
        span = st * n
    return True


def contiguity_of(t: torch.Tensor, tv: TensorView) -> list[bool | None]:
    """nvFuser's contiguity of a tensor laid out in logical order, for `tv`'s logical axes:
    None for a broadcast, True where an axis's stride is the span of the axes inside it."""
    logical = [i for i in tv.domain.logical if not i.is_reduction]
    out: list[bool | None] = []
    span = 1
    for i, n, st in reversed(list(zip(logical, t.shape, t.stride()))):
        if i.is_broadcast:
            out.append(None)
            continue
        out.append(st == span or n == 1)
        span = st * n if n != 1 else span
    return out[::-1]


# Ops that run on the host as views of their input (torch views, no copy).
_HOST_VIEWS = (ex.ViewOp, ex.SqueezeOp, ex.BroadcastOp, ex.ExpandOp, ex.LoadStoreOp, ex.SliceOp)
