"""The inner and outer persistent schedules. The persistent buffers are projected to the
inputs when the heuristic says so (`prepare`), put in shared memory when it put them there,
and inlined at the iteration axes only, so that they stay alive across the reduction;
`separate_reduction_phases` (reduction_phases.py) keeps what a reduction reads apart from
what reads its result. The combined inner-outer schedule (inner_outer_schedule.py) uses
`prepare` and `live_buffers` too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import (
    is_reduction_result,
    persistent_buffers,
    reduction_tvs,
)
from engine.ir.tensorview import MemoryType, TensorView
from engine.schedule import tools
from engine.schedule.persistent_projection import project_to_inputs
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.reduction_phases import separate_reduction_phases
from engine.schedule.reduction_schedule import inline, rfactor_serial, schedule_reference, vectorize_io
from engine.schedule.tools import note_transform

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


def prepare(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    if p.project_persistent_buffers:
        project_to_inputs(fusion, persistent_buffers(fusion, through_results=p.project_through_results), trace,
                          staged=p.project_for_staging)


def live_buffers(fusion: Fusion) -> list[TensorView]:
    return [t for t in persistent_buffers(fusion).persistent_buffers if t not in fusion.inputs]


def schedule_inner_or_outer(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    prepare(fusion, p, trace)
    # After caching, an input buffer lives in its cache: find the buffers then.
    caches = tools.cache_inputs(fusion, trace=trace, elementwise_of_lookups=True)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    buffers = live_buffers(fusion)
    if p.smem_persistent_buffers:
        # Rows go to shared memory; a reduction's result (one value a row, which every
        # thread holds after its block reduction) stays in registers.
        for b in (b for b in buffers if not is_reduction_result(b)):
            b.set_memory_type(MemoryType.Shared)
            if trace is not None:
                trace.event("transform", b.short_name, "persistent buffer in shared memory")

    reds = reduction_tvs(fusion)
    ref = reds[0]
    n_iter = schedule_reference(ref, p)
    note_transform(trace, ref.short_name, "reference scheduled (persistent)")
    tools.propagate_max_info(ref)
    tools.parallelize_all_like(ref)
    for r in reds:
        rf = rfactor_serial(r, trace)
        if rf is not None:
            note_transform(trace, r.short_name, f"rfactor: per-thread partial reduction in {rf.short_name}")
    v = p.unroll_factor_inner_reduction if p.fastest_dim else p.unroll_factor_iter_dom
    outs = [o for o in fusion.outputs if isinstance(o, TensorView) and o not in fusion.inputs]
    vectorize_io(fusion, [*caches, *outs], v)
    inline(fusion, buffers, n_iter, trace)
    separate_reduction_phases(fusion, reds, n_iter, trace)
