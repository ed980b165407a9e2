"""Profiling a compiled fusion: its segments run in order on their own (no host program),
each kernel segment measured at its inputs (engine.runtime.profiler). A part of
CompiledFusion (engine.compiled_fusion), whose state it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.compiled_segment import CompiledSegment
from engine.host.launch import prepare_launch
from engine.runtime.profiler import profile_emulated, profile_kernel
from engine.segment_walk import SegmentWalk

if TYPE_CHECKING:
    from engine.compiled_fusion import CompiledFusion


class Profiling:
    """CompiledFusion.profile (its `_inputs_for`, `load_kernels` and segments)."""

    def profile(self, inputs: Sequence[Any], backend: str = "cuda", *, warmup: int = 3,
                repeat: int = 20) -> list[Any]:
        """A KernelProfile per kernel segment (time, bytes, GB/s, % of peak, resources);
        on the emulator, counts and wall time only."""
        xs = self._inputs_for(inputs, backend)
        self.load_kernels(backend)
        out: list[Any] = []

        def measure(seg: CompiledSegment, args: list[Any]) -> None:
            if not seg.is_kernel:
                return
            prep = prepare_launch(seg, args, backend)
            kernel = seg.kernel(backend)
            if backend == "cuda":
                out.append(profile_kernel(kernel, prep.args, seg.launch, warmup=warmup, repeat=repeat,
                                          bytes_read=prep.bytes_read, bytes_written=prep.bytes_written,
                                          alloc_strides=prep.alloc_strides))
            else:
                out.append(profile_emulated(kernel, prep.args, seg.launch, alloc_strides=prep.alloc_strides))

        _execute(self, xs, backend, measure)
        return out


def _execute(cf: CompiledFusion, xs: list[Any], backend: str, before=None) -> list[Any]:
    """Run the segments in order; `before(seg, args)` sees each segment's inputs first."""
    walk = SegmentWalk(cf.fusion, cf.segments, xs)
    for seg, args in walk:
        if before is not None:
            before(seg, args)
        walk.put(seg, seg.run(args, backend))
    return walk.outputs()
