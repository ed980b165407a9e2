"""The segments of a compiled fusion in order, each given its arguments: the fusion's inputs
and what the segments before it produced (a scalar argument no segment produces, an extent
or a constant, is evaluated from the inputs). Whoever walks runs each segment as it likes
(a back end, the reference, a profiler) and hands back its outputs; two walks of one fusion
go in step (fusescope runs a back end and the reference segment by segment).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from engine.compile_stages import bind_env
from engine.compiled_segment import CompiledSegment
from engine.errors import ExecutionError
from engine.ir.base import Val
from engine.ir.fusion import Fusion
from engine.ir.scalar import Scalar


class SegmentWalk:
    """`for seg, args in walk:` each segment with its arguments; `walk.put(seg, outs)` before
    the next; `walk.outputs()` the fusion's outputs once every segment has run."""

    def __init__(self, fusion: Fusion, segments: Sequence[CompiledSegment], inputs: Sequence[Any]) -> None:
        self.fusion, self.segments = fusion, segments
        self._values: dict[int, Any] = {id(v): x for v, x in zip(fusion.inputs, inputs)}
        self._env = bind_env(fusion, list(inputs))

    def __iter__(self) -> Iterator[tuple[CompiledSegment, list[Any]]]:
        for seg in self.segments:
            yield seg, [self._lookup(v, f"segment {seg.id}") for v in seg.input_vals]

    def put(self, seg: CompiledSegment, outs: Sequence[Any]) -> None:
        for v, t in zip(seg.output_vals, outs):
            self._values[id(v)] = t

    def outputs(self) -> list[Any]:
        return [self._lookup(v, "the fusion's outputs") for v in self.fusion.outputs]

    def _lookup(self, v: Val, where: str) -> Any:
        if id(v) in self._values:
            return self._values[id(v)]
        if isinstance(v, Scalar):
            try:
                return v.evaluate(self._env)
            except KeyError:
                pass
        raise ExecutionError(f"{getattr(v, 'short_name', v)} is needed by {where} but no segment produced it")
