"""The pipeline, as one flat list of named stages: segment, schedule, lower, render, run.

`compile_fusion(fd, inputs)` returns a CompiledFusion specialised to the input sizes:
each segment carries its scheduler, heuristic parameters, scheduled IR, kernel IR,
CUDA source and launch configuration; `run` executes the segments in order on the
chosen back end (reference, emulate or cuda).

The compiled fusion and its parts live in modules of their own: compiled_fusion.py
(CompiledFusion: run, CUDA graphs, the input signature), profiling.py (profile),
compiled_segment.py (CompiledSegment: a segment's run and kernel launch) and allocation.py
(engine-allocated tensors). Their names stay importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from engine import fusion_cache, gc_pause, reference
from engine.allocation import _alloc_perm as _alloc_perm
from engine.allocation import alloc_strides as alloc_strides
from engine.allocation import allocate as allocate
from engine.allocation import is_padded as is_padded
from engine.compile_stages import SegmentLoweringError, bind_env, build_segments
from engine.compiled_fusion import BACKENDS as BACKENDS
from engine.compiled_fusion import CompiledFusion, _signature
from engine.compiled_segment import CompiledSegment as CompiledSegment
from engine.concretize import concretize, index_before_cast, remove_empty
from engine.config import Options
from engine.errors import CompileError, NoSchedulerError
from engine.frontend import definition as _definition
from engine.gather_first import gathers_first
from engine.host.launch import PreparedLaunch as PreparedLaunch
from engine.host.launch import prepare_launch as prepare_launch
from engine.host.lower import lower_to_host
from engine.ir.fusion import Fusion
from engine.ir.iterdomain import transforms_kept
from engine.ir.tensorview import TensorView
from engine.layout_order import intermediates_in_input_order
from engine.preseg import (
    expanded_outputs_apart,
    matmul_without_reduction,
    replan_reshapes,
    scatters_as_selects,
    views_of_outputs_apart,
)
from engine.profiling import _execute as _execute
from engine.segment.refusals import Refusals
from engine.segment.sizes import Sizes
from engine.shape_rules import check_sizes
from engine.trace import Trace


def _bound(fusion: Fusion, inputs: Sequence[Any]) -> Any:
    """A scalar of `fusion` evaluated at the sizes and scalar values of `inputs`."""
    env = bind_env(fusion, list(inputs))
    return lambda s: s.evaluate(env)


# Each refusal costs a segmentation: after this many, failing groups are split into single ops.
_SCHEDULER_REFUSALS = 4


# Compiles a fusion whose tensors carry device meshes for this rank's shards (installed by
# engine.multidevice, which `import engine` imports): this rank's program, its regions compiled.
MULTIDEVICE_COMPILE: Any = None


def compile_fusion(fd: Any, inputs: Sequence[Any], options: Options | None = None) -> CompiledFusion:
    """Segment, schedule, lower and render `fd` (a FusionDefinition or Fusion) for `inputs`.
    A definition compiled before for inputs of the same signature, with the same options,
    is not compiled again (engine.fusion_cache)."""
    original: Fusion = fd.fusion if hasattr(fd, "fusion") else fd
    options = options or Options()
    meshed = next((v for v in original.vals() if isinstance(v, TensorView) and v.device_mesh is not None), None)
    if meshed is not None:
        if MULTIDEVICE_COMPILE is None:
            raise CompileError(f"{meshed.short_name} has a device mesh: import engine.multidevice to compile it")
        return MULTIDEVICE_COMPILE(fd, inputs, options)
    reference.check_input_layouts(original, inputs)
    # The definition's listing is both part of the cache key and the first stage's text
    # (a clone keeps names, so it prints the same): printed once.
    listing = str(original)
    cache_key = fusion_cache.key(fd, inputs, options, listing if original is getattr(fd, "fusion", None) else None)
    cached = fusion_cache.get(cache_key)
    if cached is not None:
        return cached
    # The ops' size rules, from the sizes alone: a fusion that cannot run at these sizes is
    # refused before it is segmented, as the reference would refuse it.
    sizes = Sizes(original, inputs)
    check_sizes(original, sizes.sizes, sizes.value)
    refusals = Refusals()
    notes: list[tuple[str, str]] = []
    with gc_pause.held(), transforms_kept():
        while True:
            # The segmenter rewrites the fusion it segments (privatized casts, global
            # boundaries); the user's definition stays as written. Clones keep names.
            fusion, _ = original.clone()
            trace = Trace()
            trace.stage("fusion_ir_original", listing)
            value_of = _bound(fusion, inputs)
            concretize(fusion, value_of, trace)
            remove_empty(fusion, value_of, trace)
            replan_reshapes(fusion, value_of, trace)
            index_before_cast(fusion, trace)
            gathers_first(fusion, trace)
            matmul_without_reduction(fusion, trace)
            scatters_as_selects(fusion, value_of, trace)
            expanded_outputs_apart(fusion, trace)
            views_of_outputs_apart(fusion, trace)
            intermediates_in_input_order(fusion, trace)
            for note, rule in notes:
                trace.event("segment", "fusion", note, rule=rule)
            try:
                segments, segmented = build_segments(fusion, list(inputs), options, trace, refusals)
                break
            except SegmentLoweringError as e:
                # The schedulers' checks passed but the kernel could not be lowered. First that
                # scheduler is refused for the group (another may take it, or the segmenter
                # groups the ops otherwise); then the ops run as segments of their own rather
                # than not at all.
                if not e.exprs:
                    raise
                if e.at is not None and refusals.isolate(
                        frozenset({e.at}), f"kept apart: its output failed to lower with the ops around it ({e})"):
                    notes.append((f"{e}; the op producing it is segmented apart", "isolate_op"))
                    continue
                if e.scheduler and refusals.refuse(e.exprs, e.scheduler, str(e), _SCHEDULER_REFUSALS,
                                                   e.containing):
                    which = (f"every group holding its {len(e.containing)} reductions" if e.containing
                             else f"these {len(e.exprs)} ops")
                    notes.append((f"{e}; {e.scheduler} is refused for {which} and the fusion is "
                                  "segmented again", "refuse_scheduler"))
                    continue
                if not refusals.isolate(e.exprs, f"kept apart: a segment holding it failed to lower ({e})"):
                    raise
                notes.append((f"{e}; its {len(e.exprs)} ops are segmented again, each apart", "isolate"))
            except NoSchedulerError as e:
                # Forwarding replicates an input's cheap ops into its readers' segments; a
                # segment can become unschedulable by it (a pad whose input is no longer a
                # segment input). Without forwarding those ops run as segments of their own.
                # A group left unschedulable otherwise (its scheduler refused after its kernel
                # failed to lower) is split: its ops are segmented again, each apart.
                first = str(e).splitlines()[0].rstrip(":")
                if options.forwarding:
                    options = replace(options, forwarding=False)
                    notes.append((f"{first} with input forwarding: segmented again without it", "no_forwarding"))
                    continue
                if len(e.exprs) < 2 or not refusals.isolate(e.exprs, f"kept apart: {first}"):
                    raise
                notes.append((f"{first}: its {len(e.exprs)} ops are segmented again, each apart", "isolate"))
        cf = CompiledFusion(fusion, segments, trace, options, _signature(list(inputs)), segmented)

        cf.host_ir = lower_to_host(cf, trace)
    fusion_cache.put(cache_key, cf)
    return cf


# fd.execute compiles through this module (engine.frontend.definition.COMPILE).
_definition.COMPILE = compile_fusion
