"""What schedulers know at run time: concrete sizes, strides, alignment, the device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from engine.dtypes import DataType
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import IterDomain
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView
from engine.reference import Context, bind_input
from engine.runtime.device import DeviceProperties, current


class SchedulerRuntimeInfo:
    """Binds a fusion's symbolic extents to the sizes of example inputs.

    Heuristics read only this object: sizes, strides, pointer alignment of inputs and
    the device's properties (the real GPU, or the named model when there is none).
    """

    def __init__(self, fusion: Fusion, inputs: Sequence[Any], device: DeviceProperties | None = None) -> None:
        self.fusion = fusion
        self.device = device or current()
        # Sizes only: meta tensors bind the extents without copying device data to the host.
        ctx = Context(torch.device("meta"))
        self._tensors: dict[TensorView, torch.Tensor] = {}
        for k, (val, x) in enumerate(zip(fusion.inputs, inputs, strict=True)):
            # A meta tensor already (the segmenter's intermediates) binds as its copy would.
            meta = (torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
                    if isinstance(x, torch.Tensor) and not x.is_meta else x)
            bind_input(k, val, meta, ctx)
            if isinstance(val, TensorView):
                self._tensors[val] = x
        self.env = ctx.env

    def value(self, s: Scalar) -> int:
        return int(s.evaluate(self.env))

    def extent(self, i: IterDomain) -> int:
        """Iterations of `i` at these sizes (an expanded broadcast counts its expansion)."""
        if i.expanded_extent is not None:
            return self.value(i.expanded_extent)
        return self.value(i.extent)

    def sizes(self, tv: TensorView) -> list[int]:
        return [self.extent(i) for i in tv.domain.logical if not i.is_reduction]

    def numel(self, tv: TensorView) -> int:
        n = 1
        for s in self.sizes(tv):
            n *= s
        return n

    def strides(self, tv: TensorView) -> list[int] | None:
        """Element strides of an input, None for intermediates."""
        x = self._tensors.get(tv)
        return list(x.stride()) if x is not None else None

    def input_bytes(self, tv: TensorView) -> int:
        """Bytes of memory an input's elements span (a stride-0 axis counts once); 0 for
        intermediates."""
        x = self._tensors.get(tv)
        if x is None or x.numel() == 0:
            return 0
        span = 1 + sum((n - 1) * abs(st) for n, st in zip(x.shape, x.stride()))
        return span * x.element_size()

    def alignment(self, tv: TensorView) -> int:
        """Largest power of two (at most 16) dividing an input's address in bytes; 16 otherwise.

        Engine-allocated tensors are 256-byte aligned, so intermediates and outputs
        never limit vectorization.
        """
        x = self._tensors.get(tv)
        if x is None or x.numel() == 0:
            return 16
        ptr = x.data_ptr()
        a = 16
        while a > 1 and ptr % a:
            a //= 2
        return a

    def index_type(self) -> DataType:
        """Int32 when every tensor's element span fits in 32 bits, else Int."""
        for tv in self.fusion.tensors():
            if self.numel(tv) >= 2**31:
                return DataType.Int
        return DataType.Int32
