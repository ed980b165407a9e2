"""The engine's compiler behind the debugger: a fusion compiled at its example inputs
(segmented, scheduled, lowered, rendered as CUDA) and the CompiledFusion flattened into a
CompileResult, so that views and the CLI never hold engine objects. Every failure becomes the
result's one-line `error`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.compile import CompiledFusion, compile_fusion
from engine.config import Options
from engine.errors import FusionDefinitionError
from engine.ir.printer import transforms_block
from engine.schedule.registry import PRIORITY
from engine.trace import Event
from fusescope.compile_options import CompileOptions
from fusescope.compile_result import (
    CompileResult,
    DecisionInfo,
    EdgeInfo,
    EventInfo,
    SegmentInfo,
    VerdictInfo,
    failed_compile,
)
from fusescope.launch_text import LaunchInfo
from fusescope.text_format import one_line

if TYPE_CHECKING:
    from engine import FusionDefinition

# Trace kinds that are a scheduler's decisions about one segment (verdicts, heuristics, the
# choice); the segmenter's own decisions are SEGMENTER_KINDS below.
DECISION_KINDS = ("can_schedule", "heuristic", "schedule")

# Trace kinds that are the segmenter's decisions (the rest are per-segment scheduling detail,
# shown by the Schedule view and `show --why`).
SEGMENTER_KINDS = ("segment", "fold", "forward", "merge", "narrow")


def scheduler_names() -> list[str]:
    """The engine's schedulers in priority order (what force_scheduler accepts)."""
    return [str(p) for p in PRIORITY]


def _engine_options(options: CompileOptions) -> object:
    return Options(forwarding=options.forwarding, force_scheduler=options.force_scheduler,
                   num_streams=options.num_streams, device_model=options.device_model,
                   heuristic_overrides=dict(options.heuristic_overrides),
                   kernel_sources=dict(options.kernel_sources),
                   # A replaced kernel may fault: waiting after each launch names the segment.
                   sync_launches=bool(options.kernel_sources))


def compile_definition(fd: FusionDefinition, options: CompileOptions) -> tuple[object | None, CompileResult]:
    """(CompiledFusion or None, its flattened result); every failure becomes `error`."""
    start = time.perf_counter()
    try:
        xs = fd.example_inputs(device="cpu", seed=0, sizes=options.sizes())
    except FusionDefinitionError as e:
        return None, failed_compile(options, f"no example inputs: {one_line(str(e))}")
    except Exception as e:  # building tensors from the file's specs can fail in many ways
        return None, failed_compile(
            options, f"could not build the example inputs: {type(e).__name__}: {one_line(str(e))}")
    try:
        cf = compile_fusion(fd, xs, _engine_options(options))
    except Exception as e:  # EngineError or a bug in a stage: either way one line for the user
        return None, failed_compile(options, f"{type(e).__name__}: {one_line(str(e))}",
                                     time.perf_counter() - start)
    result = _flatten(cf, options, time.perf_counter() - start)
    return cf, replace(result, origins=_origins(fd))


def _origins(fd: FusionDefinition) -> dict[str, tuple[str, int]]:
    """Tensor name -> its name and line in the file it was read from (the reader records them)."""
    names: dict[Any, tuple[str, int]] = getattr(fd, "source_names", {})
    return {v.short_name: where for v, where in names.items() if v.short_name.startswith("T")}


def _flatten(cf: object, options: CompileOptions, seconds: float) -> CompileResult:
    assert isinstance(cf, CompiledFusion)
    sf = cf.segmented
    groups = {g.id: g for g in sf.groups} if sf is not None else {}
    segments = []
    by_subject: dict[str, list[Any]] = {}
    for e in cf.trace:
        if e.kind in DECISION_KINDS:
            by_subject.setdefault(e.subject, []).append(e)
    for seg in cf.segments:
        g = groups.get(seg.id)
        launch = seg.launch
        events = by_subject.get(f"g{seg.id}", [])
        segments.append(SegmentInfo(
            id=seg.id,
            scheduler=str(seg.scheduler),
            ops=len(g.exprs) if g is not None else len(seg.fusion.exprs()),
            forwarded=len(g.forwarded_exprs) if g is not None else 0,
            inputs=tuple(seg.inputs),
            outputs=tuple(seg.outputs),
            params=str(seg.params) if seg.params is not None else "",
            scheduled_ir=seg.scheduled_ir,
            kernel_name=seg.kernel_name,
            cuda_source=seg.cuda_source,
            kernel_ir=seg.kernel_ir,
            launch=str(launch) if launch is not None else None,
            grid=tuple(launch.grid) if launch is not None else None,
            block=tuple(launch.block) if launch is not None else None,
            shared_mem_bytes=launch.shared_mem_bytes if launch is not None else None,
            stages=tuple(seg.stages.items()),
            verdicts=_last_verdicts(events),
            derivation=tuple(getattr(seg.params, "derivation", ()) or ()),
            events=tuple(EventInfo(e.kind, e.subject, e.message, str(e)) for e in events),
            tensors=tuple((tv.short_name, transforms_block(tv)) for tv in seg.fusion.tensors()),
            launch_info=_launch_info(seg),
        ))
    edges: list[EdgeInfo] = []
    if sf is not None:
        # The networkx view joins parallel edges (several tensors between two segments).
        graph = sf.to_networkx()
        edges = [EdgeInfo(a, b, tuple(d["tensors"]), int(d["bytes"])) for a, b, d in graph.edges(data=True)]
    owners: dict[str, set[int]] = {}  # expression name -> the final segments holding it
    for g in sf.groups if sf is not None else ():
        for x in g.exprs:
            owners.setdefault(x.name, set()).add(g.id)
    decisions = [_decision(e, owners) for e in cf.trace if e.kind in SEGMENTER_KINDS]
    # The host-IR program (CompiledFusion.host_ir), where the compile made one.
    host_ir = getattr(cf, "host_ir", None)
    note = "" if sf is not None else (
        "No segment graph: the segmenter did not run (a user-scheduled fusion runs as written, one segment).")
    return CompileResult(
        options=options, segments=segments, edges=edges, decisions=decisions,
        segmented_text=str(sf) if sf is not None else "",
        host_ir=str(host_ir) if host_ir is not None else None,
        compile_time_s=seconds, note=note,
    )


def _launch_info(seg: Any) -> LaunchInfo | None:
    """`seg` (an engine CompiledSegment) as LaunchInfo; None when it has no kernel."""
    launch = seg.launch
    if launch is None or seg.cuda_source is None:
        return None
    use = seg.shared_memory
    parts = tuple(use.parts()) if use is not None else ()
    lp = getattr(seg.params, "lparams", None)
    plan = (lp.bdimx, lp.bdimy, lp.bdimz, lp.gdimx, lp.gdimy, lp.gdimz, lp.smem) if lp is not None else None
    return LaunchInfo(tuple(launch.grid), tuple(launch.block), launch.shared_mem_bytes, launch.cooperative,
                      parts, bool(use is not None and use.cp_async), plan, tuple(seg.vector_widths),
                      _planned_vectors(seg.params))


def _planned_vectors(params: Any) -> tuple[int, ...]:
    """The vector widths a scheduler's parameters ask for (above 1), by its parameter names."""
    if params is None:
        return ()
    factors = [getattr(params, "vectorization_factor", 1), getattr(params, "vectorize_factor1", 1),
               getattr(params, "vectorize_factor2", 1)]
    if getattr(params, "vectorize_inner_reduction", False):
        factors.append(params.unroll_factor_inner_reduction)
    if getattr(params, "vectorize_iter_dom", False):
        factors.append(params.unroll_factor_iter_dom)
    return tuple(sorted({v for v in factors if isinstance(v, int) and v > 1}))


def _last_verdicts(events: list[Any]) -> tuple[VerdictInfo, ...]:
    """The verdicts of the last can_schedule round about a segment (the segmenter may have
    asked the same schedulers about the same group earlier; the scheduling step decides)."""
    checks = [e for e in events if e.kind == "can_schedule"]
    first = checks[0].data["scheduler"] if checks else None
    starts = [i for i, e in enumerate(checks) if e.data["scheduler"] == first]
    last = checks[starts[-1]:] if starts else []
    return tuple(VerdictInfo(str(e.data["scheduler"]), bool(e.data["accepted"]), str(e.data.get("reason", "")),
                             e.message) for e in last)


def _decision(e: object, owners: dict[str, set[int]]) -> DecisionInfo:
    assert isinstance(e, Event)
    accepted = e.data.get("accepted") if e.kind == "merge" else None
    refusals: tuple[str, ...] = ()
    if accepted is False:
        refusals = tuple(
            f"{v['scheduler']}: {v.get('reason') or 'rejected'}"
            for v in e.data.get("verdicts", []) if not v.get("accepted")
        )
    finals = tuple("/".join(f"g{i}" for i in sorted({i for x in group for i in owners.get(x, ())})) or "?"
                   for group in e.data.get("groups", []))
    return DecisionInfo(e.kind, e.subject, e.message, accepted if isinstance(accepted, bool) else None, refusals,
                        finals)
