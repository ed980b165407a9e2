"""Heuristics of the reduction scheduler, after nvFuser's reduction_heuristic: threads
along the dimension that is contiguous in memory (TIDx), vectorized loads of up to 16 bytes
on it, several reductions per block (TIDy) when a row is short, and a grid reduction
(blockIdx.y) when there are too few rows to fill the device. The vector width
(`vectorize_factor`) and the recording of a derivation (`record`) serve the persistent
schedulers' heuristics too."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from engine.analysis.persistent import dtype_bytes, reduction_properties, reduction_tvs
from engine.analysis.vectorize import vectorization_factor
from engine.ir import exprs as ex
from engine.ir.iterdomain import ParallelType
from engine.ir.tensorview import TensorView
from engine.schedule.params import LaunchParams
from engine.schedule.reduction_outer import outer_reduction_params
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.tools import ceil_div, next_pow2, prev_pow2

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


def innermost_memory_dim(sizes: list[int], strides: list[int]) -> int | None:
    """Index of the dimension with stride 1 (the innermost in memory), ignoring size-1 dims
    and expanded (stride 0) ones other than the last: an input expanded over outer axes
    (a [S, S] mask seen as [B, H, S, S]) is still read row by row. An expanded last axis
    is the innermost (no vector reads it)."""
    cand = [k for k, (n, s) in enumerate(zip(sizes, strides)) if n != 1]
    if not cand:
        return None
    if strides[cand[-1]] != 0:
        cand = [k for k in cand if strides[k] != 0]
    return min(cand, key=lambda k: (strides[k], -k))


def vectorize_factor(fusion: Fusion, info: SchedulerRuntimeInfo, inner_numel: int) -> tuple[int, list[str]]:
    """Elements per vectorized access on the innermost dimension, with why.

    Up to 16 bytes of the widest input, a power of two dividing the innermost extent
    and every input's innermost extent, on inputs whose innermost dimension has
    stride 1 and whose address is aligned to the vector (as nvFuser's
    vectorize_helper on the reduced tensor's producer, simplified to inputs).
    """
    why: list[str] = []
    tv_inputs = [v for v in fusion.inputs if isinstance(v, TensorView) and info.numel(v) > 0]
    along = _read_along_innermost(fusion, info, tv_inputs)
    widest = max((dtype_bytes(t) for t in along), default=4)
    v = max(1, 16 // widest)
    why.append(f"16 bytes / {widest}-byte elements -> {v}"
               + (f" ({', '.join(t.short_name for t in tv_inputs if t not in along)} not read along it)"
                  if len(along) < len(tv_inputs) else ""))
    while v > 1 and inner_numel % v:
        v //= 2
    why.append(f"divides the innermost extent {inner_numel} -> {v}")
    for t in along:
        sizes, strides = info.sizes(t), info.strides(t) or []
        k = innermost_memory_dim(sizes, strides)
        if k is None:
            continue
        if strides[k] != 1:
            why.append(f"{t.short_name}: innermost stride {strides[k]} != 1 -> 1")
            return 1, why
        while v > 1 and (sizes[k] % v or info.alignment(t) < v * dtype_bytes(t)):
            v //= 2
        # Every row must start aligned too: an outer stride that is not a multiple of the
        # vector (a padded or sliced input) puts later rows' vectors off alignment.
        for d, (n, st) in enumerate(zip(sizes, strides)):
            while d != k and n > 1 and v > 1 and st % v:
                v //= 2
    why.append(f"every input's innermost extent, outer strides and alignment allow {v}")
    return v, why


def _read_along_innermost(fusion: Fusion, info: SchedulerRuntimeInfo, tv_inputs: list[TensorView]) -> list[TensorView]:
    """The inputs read along the reduced tensor's innermost axis (the axis the vector walks):
    all but those engine.analysis.vectorize's region mapping does not reach at all (a
    per-row input, as a cross entropy's int64 labels), which do not narrow the vector. All
    of them where the mapping cannot tell."""
    try:
        ref = reduction_tvs(fusion)[0].definition.inputs[0]
        if not isinstance(ref, TensorView):
            return tv_inputs
        res = vectorization_factor(fusion, ref, info, break_point=max(0, len(ref.domain.logical) - 1))
    except Exception:  # noqa: BLE001 - an analysis that does not apply leaves every input counted
        return tv_inputs
    along = [t for t in tv_inputs if t not in res.apart]
    return along or tv_inputs


def reduction_heuristics(
    fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None = None, tag: str = "Reduction heuristics"
) -> ReductionParams:
    """Block and grid shape of a non-persistent inner or outer reduction."""
    reds = reduction_tvs(fusion)
    props = reduction_properties(reds[0], info)
    dev = info.device
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    why = [f"reduction numel {red_n}, iteration numel {it_n}, inner-most numel "
           f"{props.inner_most_dimension_numel}", *why]
    if props.fastest_dim_reduction:
        after_v = ceil_div(red_n, v)
        bdimx = min(next_pow2(after_v), 512)
        bdimy = 1
        if bdimx < 128 and it_n > 1:
            bdimy = min(128 // bdimx, next_pow2(it_n))
        gdimx = ceil_div(it_n, bdimy)
        serial = ceil_div(after_v, bdimx)
        gdimy = 1
        if gdimx < dev.sm_count and serial >= 8:
            # Too few rows to fill the SMs and long rows: split each row over blocks.
            gdimy = min(prev_pow2(serial // 4), max(1, prev_pow2(dev.sm_count * 4 // gdimx)))
        why.append(f"TIDx {bdimx} over {after_v} vectors; TIDy {bdimy} rows per block; "
                   f"BIDx {gdimx}; BIDy {gdimy} (grid reduction when rows < {dev.sm_count} SMs)")
        p = ReductionParams(
            tag=tag, fastest_dim=True,
            cross_block_inner_reduction=True, cross_grid_inner_reduction=gdimy > 1,
            unroll_factor_inner_reduction=v, vectorize_inner_reduction=v > 1,
            multiple_reds_per_blk=bdimy > 1,
            block_dim_inner_reduction=ParallelType.block_x,
            grid_dim_inner_reduction=ParallelType.grid_y if gdimy > 1 else ParallelType.serial,
            block_dim_iter_dom=ParallelType.block_y if bdimy > 1 else ParallelType.serial,
            grid_dim_iter_dom=ParallelType.grid_x if props.total_iteration_numel > 0 else ParallelType.serial,
            lparams=LaunchParams(gdimx=gdimx, gdimy=gdimy, bdimx=bdimx, bdimy=bdimy),
        )
    else:
        ins = [t for t in fusion.inputs if isinstance(t, TensorView) and info.numel(t) > 0]
        bits = max((t.dtype.bits for t in ins), default=32)
        welford = any(isinstance(r.definition, ex.WelfordOp) for r in reds)
        p = outer_reduction_params(red_n, it_n, len(ins), bits, v, has_expensive_math(fusion), dev, tag, why,
                                   welford)
    return record(p, why, info, trace)


# Unary ops the special function unit computes (nvFuser's hasExpensiveMUFUops).
_EXPENSIVE = {"exp", "tanh", "reciprocal", "rsqrt", "log", "log10", "log2", "sin", "cos"}


def has_expensive_math(fusion: Fusion) -> bool:
    return any(isinstance(e, ex.UnaryOp) and e.op in _EXPENSIVE for e in fusion.exprs())


def record(p: ReductionParams, why: list[str], info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    idx = "int" if info.index_type().name == "Int32" else "int64_t"
    p = replace(p, derivation=tuple(why), index_type=idx)
    if trace is not None:
        for line in why:
            trace.event("heuristic", p.tag, line)
    return p
