"""Generated kernels (the real runtime prelude) for the emulator's compile tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from engine import DataType, FusionDefinition
from engine.compile import CompiledFusion, compile_fusion


def pointwise(op: str = "exp", *, segments: int = 1) -> tuple[FusionDefinition, list[torch.Tensor]]:
    """out = op(op(...op(x))) over a [8, 16] float tensor, cut into `segments` kernels."""
    fd = FusionDefinition()
    with fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        apply: Callable[[Any], Any] = getattr(fd.ops, op)
        t = apply(t)
        for _ in range(segments - 1):
            t = apply(fd.ops.segment_set(t))
        fd.add_output(t)
    return fd, [torch.randn(8, 16, generator=torch.Generator().manual_seed(0))]


def compiled(op: str = "exp", *, segments: int = 1) -> tuple[CompiledFusion, list[torch.Tensor]]:
    fd, xs = pointwise(op, segments=segments)
    return compile_fusion(fd, xs), xs


def kernel_job(op: str) -> tuple[str, str, list[Any]]:
    """(source, name, specs) of the one kernel of pointwise(op): what load_kernel takes."""
    cf, _ = compiled(op)
    seg = next(s for s in cf.segments if s.is_kernel)
    return seg.cuda_source, seg.kernel_name, seg.lowered.kernel.params
