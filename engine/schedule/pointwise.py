"""The pointwise scheduler: 1-D and 2-D (break point) schedules over a reference output.

Acceptance follows nvFuser's PointWiseScheduler::canScheduleCompileTime (a reference
tensor, inputs of select/gather and resize ops are fusion inputs, no reductions,
block scales are fusion outputs) and the ops this engine evaluates with torch (matmul,
linear, the grouped matmul) which no generated kernel takes. The seed-000 rule for the
layout op (its offsets are fusion inputs and its output a fusion output without uses)
is checked by the registry before every scheduler's own checks (global_memory.py). With a
reshape, the flattened schedule is tried on a copy and refused, naming the tensor, when
some tensor could not be inlined into its consumers (reshape_schedule_reason).

This module holds the scheduler's verdicts; its parts are pointwise_reference (the
reference output, whose axes cover every input's), pointwise_checks (the compile-time
checks beyond the reference), pointwise_heuristics (PointwiseParams: the break point,
vector and unroll factors, after nvFuser's non-TMA pointwise heuristics) and
pointwise_schedule (caching, the reference's transforms propagated to every tensor,
parallel types, vectorization, inlining).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.ir import exprs as ex
from engine.ir.aten_exprs import ATEN_ONLY
from engine.ir.quant_exprs import BlockQuantizationOp, CutlassNvfp4GroupedMmaOp
from engine.ir.tensorview import TensorView
from engine.schedule import tools
from engine.schedule.base import Scheduler, SchedulerType
from engine.schedule.params import HeuristicParams
from engine.schedule.pointwise_checks import (
    block_quantization_reference_reason,
    concrete_last,
    conflicting_reshapes,
    has_reduction,
    non_terminal_block_quantize,
    reshape_schedule_reason,
)
from engine.schedule.pointwise_heuristics import (
    GRID_Y_LIMIT,
    THREADS_X,
    VECTOR_BYTES,
    PointwiseParams,
    block_quantization_size,
    compute_pointwise_heuristics,
)
from engine.schedule.pointwise_reference import covers_inputs, find_reference
from engine.schedule.pointwise_schedule import schedule_pointwise, serial_nests, uncacheable_inputs
from engine.schedule.registry import register
from engine.schedule.tools import memory_promotion_reason

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


_UNSUPPORTED = (ex.MatmulOp, ex.LinearOp, CutlassNvfp4GroupedMmaOp, *ATEN_ONLY)


@register
class PointwiseScheduler(Scheduler):
    type = SchedulerType.pointwise

    def reject_compile_time(self, fusion: Fusion) -> str | None:
        # The layout op's global-buffer rule is checked by the registry before this, for
        # every scheduler (nvFuser's checkCanSchedule).
        unsupported = sorted({type(e).__name__ for e in fusion.exprs() if isinstance(e, _UNSUPPORTED)})
        if unsupported:
            return (f"Has unsupported ops: {', '.join(unsupported)} "
                    "(evaluated by the expr_eval scheduler in this engine)")
        ref = find_reference(fusion)
        if ref is None:
            return "cannot find reference tensor"
        reached = tools.connected_tensors(ref)
        apart = next((o for o in fusion.outputs if isinstance(o, TensorView) and o not in reached), None)
        if apart is not None:
            # Propagation from the reference never reaches it: every thread would write it whole.
            return f"output {apart.short_name} shares no tensor with the reference {ref.short_name}"
        why = memory_promotion_reason(fusion)
        if why is not None:
            return why
        if conflicting_reshapes(fusion):
            return "Fusion requires view being reversible."
        if has_reduction(fusion):
            return "no support for reduction ops"
        if non_terminal_block_quantize(fusion) is not None:
            return "no support for block quantization where block scales is not a fusion output"
        why = block_quantization_reference_reason(fusion)
        if why is not None:
            return why
        return reshape_schedule_reason(fusion)

    def reject_runtime(self, fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
        # nvFuser's canScheduleRunTime asks for a vector of at least 2 and no split grid
        # y, because its runtime function quantizes a block with 2-8 threads of 8-2
        # grouped elements each. This engine's runtime function (nvfp4QuantizeBlock)
        # quantizes a whole block in one thread, and the schedule is 1-D over blocks,
        # so neither limit applies; the last axis must hold whole blocks.
        for e in fusion.exprs():
            if not isinstance(e, BlockQuantizationOp):
                continue
            assert isinstance(e.inputs[0], TensorView)
            k = info.extent(concrete_last(e.inputs[0]))
            if k % e.block_size:
                return (f"Block Quantization Op needs the last axis ({k}) of "
                        f"{e.inputs[0].short_name} to be a multiple of the block size "
                        f"{e.block_size}.")
        return None

    def compute_heuristics(
        self, fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None
    ) -> PointwiseParams:
        return compute_pointwise_heuristics(fusion, info, trace)

    def schedule(self, fusion: Fusion, params: HeuristicParams | None, trace: Trace | None = None) -> None:
        if not isinstance(params, PointwiseParams):
            raise TypeError(f"the pointwise scheduler needs PointwiseParams, got {params!r}")
        schedule_pointwise(fusion, params, trace)


__all__ = [
    "GRID_Y_LIMIT", "THREADS_X", "VECTOR_BYTES", "PointwiseParams", "PointwiseScheduler",
    "block_quantization_reference_reason", "block_quantization_size", "conflicting_reshapes",
    "covers_inputs", "find_reference", "has_reduction", "memory_promotion_reason",
    "non_terminal_block_quantize", "reshape_schedule_reason", "schedule_pointwise",
    "serial_nests", "uncacheable_inputs",
]
