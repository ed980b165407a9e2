"""The inner and outer persistent schedules. The persistent buffers are projected to the
inputs when the heuristic says so (`prepare`), put in shared memory when it put them there,
and inlined at the iteration axes only, so that they stay alive across the reduction;
`separate_reduction_phases` keeps what a reduction reads apart from what reads its result.
The combined inner-outer schedule (inner_outer_schedule.py) uses `prepare`,
`live_buffers` and `separate_reduction_phases` too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.logical_map import consumers_of
from engine.analysis.persistent import (
    downstream_tvs,
    persistent_buffers,
    reduction_tvs,
    sibling_tvs,
    upstream_tvs,
)
from engine.ir.tensorview import MemoryType, TensorView
from engine.schedule import tools
from engine.schedule.persistent_projection import project_to_inputs
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.reduction_schedule import inline, rfactor_serial, schedule_reference, vectorize_io
from engine.schedule.tools import note_transform

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.trace import Trace


def prepare(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    if p.project_persistent_buffers:
        project_to_inputs(fusion, persistent_buffers(fusion), trace)


def live_buffers(fusion: Fusion) -> list[TensorView]:
    return [t for t in persistent_buffers(fusion).persistent_buffers if t not in fusion.inputs]


def schedule_inner_or_outer(fusion: Fusion, p: ReductionParams, trace: Trace | None) -> None:
    prepare(fusion, p, trace)
    # After caching, an input buffer lives in its cache: find the buffers then.
    caches = tools.cache_inputs(fusion, trace=trace)
    tools.cache_and_fork_outputs(fusion, trace=trace)
    buffers = live_buffers(fusion)
    if p.smem_persistent_buffers:
        for b in buffers:
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


def separate_reduction_phases(fusion: Fusion, reds: list[TensorView], n_iter: int,
                              trace: Trace | None) -> list[TensorView]:
    """Keep what a reduction reads apart from what reads its result, past the iteration
    axes. Returns the tensors whose inlining it lowered.

    Right of the first `n_iter` loops (the rows), each reduction `red` runs a loop of
    its own that closes before its result is read. A tensor inlined past `n_iter` shares
    those loops with all of its consumers, so it joins them into one loop nest; when one
    such nest holds a tensor `red` is computed from and one computed from `red`'s result,
    the nest would have to run both before and after the reduction (the lowering refuses
    it as a dependence cycle). That happens when a tensor on the way to `red` is also read
    by a branch that the inlining joins with the tensors after `red` (RMS-norm backward:
    grad_out feeds both grad_out * w, summed per row, and grad_out * x_hat, whose loop
    shares 1 / rms with grad_input). Such a tensor is what nvFuser calls a persistent
    buffer: it is inlined at the iteration axes only, and kept across the reduction.
    """
    changed: list[TensorView] = []
    phases = []
    for red in reds:
        sibs = set(sibling_tvs(red))
        after: set[TensorView] = set()
        for x in sibs:
            after |= downstream_tvs(x)
        phases.append((upstream_tvs(red) - set(fusion.inputs), after - sibs, sibs))
    while True:
        nest = _nests_past(fusion, n_iter)
        glue = None
        for up, after, sibs in phases:
            mixed = {nest[t] for t in up} & {nest[t] for t in after}
            if not mixed:
                continue
            # An inlining path from `up` to `after` leaves `up` through such a tensor
            # (a producer of a tensor in `up` is in `up`; `red` itself is not inlined).
            glue = next((t for t in sorted(up, key=lambda t: t.name)
                         if t.compute_at_pos > n_iter and nest[t] in mixed
                         and any(c not in up and c not in sibs for c in consumers_of(t))), None)
            break
        if glue is None:
            return changed
        glue.inline_at(min(n_iter, glue.nloop), best_effort=True)
        changed.append(glue)
        if trace is not None:
            trace.event("transform", glue.short_name,
                        f"inlined at {glue.compute_at_pos} (iteration axes only): read before a "
                        "reduction and by a loop nest that also reads its result, it persists "
                        "across the reduction")


def _nests_past(fusion: Fusion, n_iter: int) -> dict[TensorView, TensorView]:
    """Each tensor's loop nest right of the first `n_iter` loops, named by one of its
    tensors: a tensor inlined past `n_iter` shares it with its consumers."""
    parent: dict[TensorView, TensorView] = {}

    def find(t: TensorView) -> TensorView:
        while parent.get(t, t) is not t:
            t = parent[t]
        return t

    for t in fusion.tensors():
        if t in fusion.inputs or t.compute_at_pos <= n_iter:
            continue
        for c in consumers_of(t):
            a, b = find(t), find(c)
            if a is not b:
                parent[a] = b
    return {t: find(t) for t in fusion.tensors()}
