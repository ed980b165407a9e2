"""The stages of compile_fusion: segment, then per segment schedule, lower and render."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.allocation import _alloc_perm, alloc_strides, allocate
from engine.analysis.flops import expr_flops
from engine.codegen.cuda import render
from engine.codegen.expressions import render as render_expr
from engine.codegen.statements import kernel_listing
from engine.compiled_segment import CompiledSegment
from engine.config import Options
from engine.dtypes import DataType
from engine.errors import CompileError, NoSchedulerError, RegisterFitError, ScheduleError
from engine.ir.base import Val
from engine.ir.exprs import LinearOp, MatmulOp, ReductionOp, WelfordOp
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import ParallelType
from engine.ir.loop_map import loop_maps_frozen
from engine.ir.quant_exprs import PreprocessGroupedMatmulInputSf
from engine.ir.scalar import Scalar
from engine.ir.tensorview import TensorView, loop_edits_trusted
from engine.lower.pipeline import lower_fusion
from engine.reference import bind_env
from engine.runtime.device import current
from engine.schedule import registry
from engine.schedule.l2_hints import mark_streamed_inputs
from engine.schedule.params import apply_overrides
from engine.schedule.persistent_fit import fit_overhead, refit
from engine.schedule.runtime_info import SchedulerRuntimeInfo
from engine.segment import segment_fusion
from engine.segment.refusals import core_exprs, engine_chose, holds_forwarded, may_resegment, op_at_fault
from engine.segment.sizes import Sizes, contiguity_of, in_logical_order
from engine.trace import Trace

if TYPE_CHECKING:
    from engine.schedule.base import SchedulerType
    from engine.segment.refusals import Refusals
    from engine.segment.sizes import Sizes


class SegmentLoweringError(CompileError):
    """A segment that a scheduler accepted failed to lower; `exprs` names its ops when the
    engine may segment them again (empty when the failure stands). `containing`: names of
    ops such that the scheduler fails for any group holding them all (its reductions, when
    no block shape keeps its persistent arrays in registers); empty: this group only."""

    def __init__(self, message: str, exprs: frozenset[int], scheduler: str = "",
                 containing: frozenset[int] = frozenset(), at: int | None = None) -> None:
        super().__init__(message)
        self.exprs = exprs
        self.scheduler = scheduler
        self.containing = containing
        self.at = at  # the name of the op (among `exprs`) whose output the failure names


def is_user_scheduled(fusion: Fusion) -> bool:
    """True when a user's schedule (fd.sched) already shaped the loops: keep it as written."""
    for tv in fusion.tensors():
        if not isinstance(tv, TensorView):
            continue
        dom = tv.domain
        if tv.compute_at_pos or any(i.is_parallelized for i in dom.loop):
            return True
        if [id(i) for i in dom.loop] != [id(i) for i in dom.logical]:
            return True
    return False


def _segment(fusion: Fusion, inputs: list[Any], options: Options, trace: Trace,
             refusals: Refusals | None = None) -> tuple[list[tuple], Any]:
    """(group fusion, value map original->clone, group inputs, group outputs, id) per group, in run order."""
    if is_user_scheduled(fusion):
        clone, vmap = fusion.clone()
        trace.event("segment", "fusion", "user-scheduled fusion: one segment, the schedule as written")
        return [(clone, vmap, list(fusion.inputs), list(fusion.outputs), 0, "user")], None
    segmented = segment_fusion(fusion, inputs, options, trace, refusals)
    groups = []
    for g in segmented.run_order():
        clone, vmap = g.make_fusion()
        groups.append((clone, vmap, list(g.fusion_inputs), list(g.outputs), g.id, g.scheduler))
    return groups, segmented


def fusion_flops(fusion: Fusion, inputs: Sequence[Any]) -> int:
    """Element operations of `fusion` at the sizes of `inputs` (tensors of any device, or meta)."""
    env = bind_env(fusion, list(inputs))
    return sum(expr_flops(e, env) for e in fusion.exprs())


def _const(v: Val, env: dict) -> Any:
    """A segment input no segment produces: a constant, or an extent of the fusion's inputs."""
    if isinstance(v, Scalar):
        try:
            return v.evaluate(env)
        except KeyError:
            pass
    raise CompileError(f"{getattr(v, 'short_name', v)} is a segment input that nothing produces")


def _boundary_tensors(groups: list[tuple], sizes: Sizes) -> dict[int, Any]:
    """Every group's input tensors at the compiled sizes, from shapes alone: the fusion's own
    inputs as given (their sizes, strides and address are read, never their data), every
    tensor a group passes on as a meta tensor laid out as the engine lays it out at run time
    (Sizes.tensor). Nothing is evaluated: compiling costs the same at any size."""
    values: dict[int, Any] = {}
    for _clone, _vmap, _g_in, g_out, _gid, _s in groups:
        for v in g_out:
            if isinstance(v, TensorView):
                values[id(v)] = sizes.tensor(v)
    for v, x in sizes.given.items():
        values[id(v)] = x
    return values


def _viewed_contiguity(clone: Fusion, g_in: list[Val], values: dict[int, Any], sizes: Sizes) -> None:
    """A segment input that a run passes as the host view of a fusion input (Sizes.viewed)
    gets that view's contiguity when it is laid out in logical order: a kernel indexes an
    axis the view steps over (a slice's window, every other element of a split pair) at its
    runtime stride. Other views have a unit innermost stride (Sizes._host_view), which the
    default contiguity states."""
    for v, c in zip(g_in, clone.inputs):
        if isinstance(v, TensorView) and isinstance(c, TensorView) and v.short_name in sizes.viewed:
            t = values[id(v)]
            if c.domain.allocation is None and in_logical_order(t):
                c.domain.contiguity = contiguity_of(t, c)


def raw_inputs(g_in: list[Val]) -> set[int]:
    """Positions of inputs that cross segments as the raw buffer their op wrote (seed 000's
    layout op: allocation-sized, padded), which input binding would reject."""
    return {k for k, v in enumerate(g_in) if isinstance(getattr(v, "definition", None), PreprocessGroupedMatmulInputSf)}


def build_segments(fusion: Fusion, inputs: list[Any], options: Options, trace: Trace,
                   refusals: Refusals | None = None) -> tuple[list, Any]:
    """Segment, then schedule, lower and render each segment. A segment of several ops that
    its (automatic) scheduler accepted but that fails to lower raises SegmentLoweringError
    naming its ops, so that the caller can segment again with them apart."""
    groups, segmented = _segment(fusion, inputs, options, trace, refusals)
    sizes = segmented.sizes if segmented is not None else Sizes(fusion, inputs)
    env = sizes.env
    values = _boundary_tensors(groups, sizes)
    segments = []
    used: set[str] = set()
    for clone, _vmap, g_in, g_out, gid, sched in groups:
        args = [values[id(v)] if id(v) in values else _const(v, env) for v in g_in]
        seg = CompiledSegment(
            gid, sched or "", [_name(v) for v in g_in], [_name(v) for v in g_out], clone, g_in, g_out,
        )
        seg.raw_inputs = raw_inputs(g_in)
        _viewed_contiguity(clone, g_in, values, sizes)
        seg.user_inputs = {k for k, v in enumerate(g_in) if v in fusion.inputs}
        seg.sync_launches = options.sync_launches
        # The segmenter's compile-time reasons for this group's cut, which the segment's
        # fusion repeats exactly: its scheduler checks need not run twice.
        known = segmented.group(gid).compile_reasons if segmented is not None else None
        try:
            used |= schedule_segment(seg, args, options, trace, known)
        except SegmentLoweringError as e:
            core = core_exprs(segmented, gid)
            if not may_resegment(seg, core, options):
                if options.forwarding and engine_chose(seg, options) and holds_forwarded(segmented, gid):
                    # One op of its own and the ops forwarded into it: nothing to split, but
                    # without forwarding those ops are segments of their own (engine.compile).
                    raise NoSchedulerError(f"{str(e).splitlines()[0]}: a segment recomputing forwarded "
                                           "ops failed to lower", frozenset(x.name for x in core)) from e.__cause__
                raise
            containing = frozenset(x.name for x in core if isinstance(x, ReductionOp | WelfordOp)) \
                if isinstance(e.__cause__, RegisterFitError) else frozenset()
            raise SegmentLoweringError(str(e), frozenset(x.name for x in core), seg.scheduler,
                                       containing, op_at_fault(seg, core, e.__cause__)) from e.__cause__
        segments.append(seg)
    unused = sorted(set(options.heuristic_overrides) - used)
    if unused:
        raise CompileError(f"heuristic override {unused[0]!r} names no parameter of any segment's "
                           "scheduler (see `fusescope show FILE --schedule` for the parameters)")
    return segments, segmented


def _name(v: Val) -> str:
    # Not getattr(v, "short_name", str(v)), which prints a tensor whole first.
    return v.short_name if hasattr(v, "short_name") else str(v)  # type: ignore[attr-defined]


def _known_strides(seg: Any, args: list[Any], env: dict) -> dict[str, list[int]]:
    """Allocation strides of the kernel's global tensors as every launch will have them: the
    fusion's own inputs' as compiled for (a run refuses others), the outputs' from the
    engine's own allocation. Inputs from earlier segments (whose layout their producer
    decides at run time), tensors with elements at 2**31 or beyond (a constant stride times an
    unsigned block index is 32-bit arithmetic), fp4 (packed) and swizzled allocations keep
    their runtime strides."""
    import torch

    fusion = seg.fusion
    tensors = [(v, a) for k, (v, a) in enumerate(zip(fusion.inputs, args)) if k in seg.user_inputs]
    tensors += [(v, allocate(v, env, torch.device("meta"))) for v in fusion.outputs
                if isinstance(v, TensorView) and v not in fusion.inputs]
    out: dict[str, list[int]] = {}
    for tv, t in tensors:
        if (isinstance(tv, TensorView) and isinstance(t, torch.Tensor) and tv.dtype != DataType.Float4_e2m1fn
                and _alloc_perm(tv) is not None
                and sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()) if n > 0) < 2**31):
            out[tv.short_name] = alloc_strides(tv, t, env)
    return out


def schedule_segment(seg: Any, args: list[Any], options: Options, trace: Trace,
                     known: Mapping[SchedulerType, str | None] | None = None) -> set[str]:
    """Schedule, lower and render one segment; returns the heuristic overrides it used.
    `known`: compile-time reasons by scheduler already found for this segment's fusion."""
    # Scheduling verifies inline positions against loop maps after every step, and lowering
    # asks for them again: each is computed once (keyed by what it depends on).
    pristine = seg.fusion.clone()[0]
    try:
        with loop_maps_frozen():
            return _schedule_segment(seg, args, options, trace, known)
    except SegmentLoweringError as e:
        # A vectorized pointwise or resize kernel that fails to lower is scheduled again
        # unvectorized before its ops are segmented otherwise (the resize scheduler's
        # propagation of a vectorized cache through broadcasts is not always indexable).
        v = getattr(seg.params, "vectorization_factor", 1)
        if v <= 1 or not isinstance(e.__cause__, CompileError) or options.heuristic_overrides:
            raise
        trace.event("lowering", f"g{seg.id}", f"{e}; scheduled again without vectorization",
                    rule="unvectorized")
        seg.fusion = pristine
        with loop_maps_frozen():
            return _schedule_segment(seg, args, options, trace, known, scalar=True)


def _schedule_segment(seg: Any, args: list[Any], options: Options, trace: Trace,
                      known: Mapping[SchedulerType, str | None] | None, scalar: bool = False) -> set[str]:
    fusion = seg.fusion
    subject = f"g{seg.id}"
    used: set[str] = set()
    if seg.raw_inputs and seg.scheduler == "expr_eval":
        # A raw buffer input (the layout op's) has no logical sizes to bind: the segmenter's
        # verdict stands, and expr_eval needs no sizes.
        seg.scheduled_ir = str(fusion)
        trace.event("schedule", subject, "expr_eval, as the segmenter decided (raw buffer input)")
        return used

    info = SchedulerRuntimeInfo(fusion, args, current(options.device_model))
    if seg.scheduler == "user" and any(isinstance(e, MatmulOp | LinearOp) for e in fusion.exprs()):
        # Matmuls run through torch (expr_eval) whatever the user scheduled around them; the
        # stream axis of a user schedule is the host program's business.
        seg.scheduler = "expr_eval"
    if seg.scheduler not in ("user", "expr_eval"):
        trace.stage("fusion_ir_presched", str(fusion))
        verdicts, first = registry.can_schedule(fusion, info, trace, subject, known)
        # The segmenter's choice stands where it still accepts: it may have passed over a
        # scheduler refused for this group (its kernel failed to lower, see Refusals).
        chosen_by_segmenter = any(v.accepted and v.scheduler.value == seg.scheduler for v in verdicts)
        kind = options.force_scheduler or (seg.scheduler if chosen_by_segmenter else
                                           first.value if first is not None else None)
        if kind is None:
            reasons = "\n".join(str(v) for v in verdicts)
            raise CompileError(f"segment {seg.id}: no scheduler accepts it:\n{reasons}")
        chosen = registry.get(kind)
        if options.force_scheduler and not next(v for v in verdicts if v.scheduler.value == kind).accepted:
            raise CompileError(f"segment {seg.id}: the forced scheduler {kind} refuses it")
        seg.scheduler = kind
        seg.params = chosen.compute_heuristics(fusion, info, trace)
        if scalar:
            seg.params = replace(seg.params, vectorization_factor=1, derivation=(
                *seg.params.derivation, "vectorization factor 1: the vectorized kernel failed to lower"))
        if seg.params is not None and options.heuristic_overrides:
            seg.params, used = apply_overrides(seg.params, options.heuristic_overrides, seg.id)
            if used:
                trace.event("heuristic", subject, seg.params.derivation[-1])
        try:
            # A persistent schedule is checked against the register file once applied; a
            # user's heuristic values stand as given.
            fresh = fusion.clone()[0] if hasattr(chosen, "fit_shapes") and not used else None
            with loop_edits_trusted():
                chosen.schedule(fusion, seg.params, trace)
            if fresh is not None:
                fusion, info = _fit_registers(seg, chosen, fusion, info, fresh, args, trace)
        except ScheduleError as e:
            # A scheduler that accepted the segment but cannot finish it (the resize
            # scheduler's checks do not replay its caches and output forks): the segment's
            # ops are segmented again, apart, as for a kernel that fails to lower.
            raise SegmentLoweringError(f"segment {seg.id} ({kind}): {e}", frozenset()) from e

        mark_streamed_inputs(fusion, info, kind, trace)
        if seg.params is not None:
            trace.stage("scheduler_params", str(seg.params))
    seg.scheduled_ir = str(fusion)
    trace.stage("fusion_ir", seg.scheduled_ir)
    if seg.scheduler in ("expr_eval", "no_op"):
        return used

    seg.kernel_name = f"nvfuser_{seg.scheduler}_f0_c0_r0_g{seg.id}"
    try:
        layouts = {}
        for v, x in zip(fusion.inputs, args):
            if isinstance(v, TensorView) and info.strides(v) is not None:
                try:
                    layouts[v.short_name] = (alloc_strides(v, x), info.alignment(v))
                except Exception:  # an input layout the kernels address through runtime strides only
                    pass
        # A persistent kernel's grid is sized to the SMs: blocks_per_sm blocks on each
        # (its launch bounds keep their registers within what that many need) are
        # co-resident, so its grid reductions may wait at a grid barrier.
        per_sm = max(1, getattr(seg.params, "blocks_per_sm", 1))
        if per_sm > 1 and per_sm * seg.params.lparams.bdimx * max(1, seg.params.lparams.bdimy) > \
                info.device.max_threads_per_sm:
            raise ScheduleError(
                f"segment {seg.id}: blocks_per_sm {per_sm} of {seg.params.lparams.bdimx}x"
                f"{max(1, seg.params.lparams.bdimy)} threads exceed the {info.device.max_threads_per_sm} "
                f"threads an SM of {info.device.name} holds")
        coresident = info.device.sm_count * per_sm if getattr(seg.params, "persistent_kernel", False) else 0
        # Pointwise kernels address global tensors with the strides they were compiled for:
        # the compiler then folds each row offset into constants. Other kernels read the
        # Tensor's strides at run time: in a kernel that already holds many registers (the
        # inner-outer persistent one) the constants cost more registers than they save.
        strides = _known_strides(seg, args, info.env) if seg.scheduler == "pointwise" else {}
        lowered = lower_fusion(fusion, info.env, seg.kernel_name, layouts, coresident, strides, per_sm, info.device,
                               show=render_expr)
    except CompileError as e:
        if _has_stream_axis(fusion):
            # The host program runs a stream-parallel segment's ops through torch, slice by
            # slice; its kernel is only a view of the user's schedule, so failing to make one
            # is a note, not an error.
            seg.kernel_name = None
            trace.event("lowering", subject, f"no kernel for the stream-parallel segment: {e}")
            return used
        raise SegmentLoweringError(f"segment {seg.id} ({seg.scheduler}): {e}", frozenset()) from e
    if lowered.unpartitioned is not None:
        why = f"segment {seg.id} ({seg.scheduler}): {lowered.unpartitioned}"
        if seg.scheduler == "user":
            # The user's schedule stands (threads writing the same values is legal, as in
            # nvFuser); the log says what it costs.
            trace.event("lowering", subject, f"{why} (kept: the user's schedule)", rule="unpartitioned_write")
        else:
            # A scheduler left an output unparallelized: the kernel is refused for this group
            # and the ops are segmented again, the log naming the tensor.
            trace.event("lowering", subject, why, rule="unpartitioned_write")
            raise SegmentLoweringError(why, frozenset())
    seg.lowered = lowered
    seg.stages = dict(lowered.stages)
    seg.kernel_ir = seg.stages["kernel_ir"] = kernel_listing(lowered.kernel)
    seg.cuda_source = render(lowered.kernel)
    if seg.id in options.kernel_sources:
        seg.cuda_source = _external_source(seg, options.kernel_sources[seg.id])
        trace.event("codegen", subject, "the generated kernel is replaced by a user-given source")
    seg.launch = lowered.kernel.launch
    seg.shared_memory = lowered.shared_memory
    seg.vector_widths = lowered.vector_widths
    smem_limit = info.device.shared_memory_per_block
    if seg.launch.shared_mem_bytes > smem_limit and seg.id not in options.kernel_sources:
        # Refused here rather than at launch, so that the segmenter can refuse the scheduler
        # for this group and place its ops otherwise.
        raise SegmentLoweringError(
            f"segment {seg.id} ({seg.scheduler}): the kernel asks for {seg.launch.shared_mem_bytes} bytes "
            f"of dynamic shared memory per block; {info.device.name} allows {smem_limit}", frozenset())
    if seg.launch.cooperative:
        per_share = "every block runs the epilogue" in seg.stages.get("grid_epilogue", "")
        trace.event("lowering", subject, f"cooperative launch: the {seg.launch.grid[0] * seg.launch.grid[1] * seg.launch.grid[2]} "
                    "blocks are co-resident, so the grid reduction waits at a grid barrier and every "
                    "block combines a share of the partials" + (", then runs the epilogue of that share"
                                                               if per_share else ""))
    trace.stage("kernel_ir", seg.kernel_ir)
    trace.stage("cuda_kernel", seg.cuda_source)
    trace.stage("launch_param", str(seg.launch))
    return used


def _fit_registers(seg: Any, chosen: Any, fusion: Fusion, info: Any, fresh: Fusion, args: list[Any],
                   trace: Trace) -> tuple[Fusion, Any]:
    """The scheduled segment, or `fresh` (its copy from before scheduling) scheduled again with
    a block shape whose per-thread arrays fit the registers (engine.schedule.persistent_fit)."""

    fresh_info = SchedulerRuntimeInfo(fresh, args, info.device)
    families, elements, schedule = chosen.fit_shapes(fresh, fresh_info, seg.params)
    found = refit(fusion, info.env, fresh, fresh_info, seg.params, families, elements, schedule,
                  fit_overhead(fresh, seg.params))
    if found is None:
        return fusion, info
    params, line = found
    seg.params = replace(params, derivation=(*params.derivation, line))
    trace.event("heuristic", params.tag, line)
    seg.fusion = fresh
    with loop_edits_trusted():
        chosen.schedule(fresh, seg.params, trace)
    return fresh, fresh_info


def _external_source(seg: Any, source: str) -> str:
    if not isinstance(source, str) or not re.search(rf"__global__\b[^;{{]*\b{seg.kernel_name}\s*\(", source):
        raise CompileError(f"segment {seg.id}: the replacement kernel source must define "
                           f"`__global__ void {seg.kernel_name}(...)` with the generated parameters")
    return source


def _has_stream_axis(fusion: Fusion) -> bool:
    return any(i.parallel_type == ParallelType.stream
               for tv in fusion.tensors() if isinstance(tv, TensorView) for i in tv.domain.loop)
