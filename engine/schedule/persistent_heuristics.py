"""Heuristics of the inner and outer persistent schedulers: the threads along the reduction
and the persistent batches each keeps, the rows (inner) or columns (outer) a block handles,
and whether the block's buffers are kept in registers or in shared memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.analysis.persistent import has_exp_op, reduction_properties, reduction_tvs
from engine.ir.iterdomain import ParallelType
from engine.schedule.inner_persistent_batch import choose_batches
from engine.schedule.params import LaunchParams
from engine.schedule.persistent_budget import (
    buffer_bytes,
    kept_buffers,
    kept_bytes,
    register_budget,
    smem_budget,
)
from engine.schedule.reduction_heuristics import record, vectorize_factor
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.tools import ceil_div, next_pow2

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.runtime.device import DeviceProperties
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


def _storage(size_per_block: int, dev: DeviceProperties, smem_per_block: int | None = None) -> str:
    """Where a block's persistent buffers go: registers when `size_per_block` fits them,
    else shared memory when what it then keeps (`smem_per_block`: every buffer at once, as
    shared memory holds them for the whole kernel) fits it."""
    if size_per_block <= register_budget(dev):
        return "registers"
    if (size_per_block if smem_per_block is None else smem_per_block) <= smem_budget(dev):
        return "shared memory"
    return "none"


def inner_persistent_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    dev = info.device
    reds = reduction_tvs(fusion)
    props = reduction_properties(reds[0], info)
    size, project, pb = buffer_bytes(fusion, info)
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    after_v = ceil_div(red_n, v)
    best, cands = choose_batches(after_v, it_n, size * 8, red_n, v, has_exp_op(fusion), dev)
    bdimx, batches, bdimy = best.bdimx, best.batches, best.bdimy
    why.append("batches rated (batches: threads x rows, warps an SM, waves, tail): " + ", ".join(
        f"{c.batches}: {c.bdimx}x{c.bdimy}, {c.warps_per_sm}, {c.waves}, {c.tails}" for c in cands))
    kept = kept_buffers(pb, project)
    in_smem = kept_bytes(pb, project, info, it_n)
    where = _storage(size * bdimy, dev, in_smem * bdimy)
    while where == "none" and bdimy > 1:
        bdimy //= 2
        where = _storage(size * bdimy, dev, in_smem * bdimy)
    gdimx = ceil_div(it_n, bdimy)
    why = [f"persistent buffer {size} bytes per row"
           + (" (projected to inputs" + (" and earlier reductions' results" if pb.through_results else "") + ")"
              if project else ""), *why,
           f"TIDx {bdimx} x batches {batches} x vector {v} covers {red_n}; TIDy {bdimy} rows per block",
           f"buffer of {size * bdimy} bytes per block in {where} (registers up to "
           f"{register_budget(dev)}, shared memory up to {smem_budget(dev)})"]
    smem = tuple(t.short_name for t in kept) if where == "shared memory" else ()
    p = ReductionParams(
        tag="Inner Persistent Heuristic", fastest_dim=True, persistent_kernel=True,
        project_persistent_buffers=project, project_through_results=project and pb.through_results,
        cross_block_inner_reduction=True, unroll_factor_inner_reduction=v,
        vectorize_inner_reduction=v > 1, batches_per_block_inner_reduction=batches,
        multiple_reds_per_blk=bdimy > 1,
        block_dim_inner_reduction=ParallelType.block_x, grid_dim_iter_dom=ParallelType.grid_x,
        block_dim_iter_dom=ParallelType.block_y if bdimy > 1 else ParallelType.serial,
        smem_persistent_buffers=smem,
        lparams=LaunchParams(gdimx=gdimx, gdimy=1, bdimx=bdimx, bdimy=bdimy,
                             smem=in_smem * bdimy if smem else 0),
    )
    return record(p, why, info, trace)


def outer_persistent_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None) -> ReductionParams:
    dev = info.device
    reds = reduction_tvs(fusion)
    props = reduction_properties(reds[0], info)
    size, project, pb = buffer_bytes(fusion, info)  # bytes per iteration column
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    after_v = ceil_div(it_n, v)
    bdimx = min(next_pow2(after_v), 32)
    bdimy = min(next_pow2(ceil_div(red_n, 4)), max(1, dev.max_threads_per_block // bdimx))
    batches = ceil_div(red_n, bdimy)
    cols = bdimx * v
    in_smem = kept_bytes(pb, project, info, it_n)
    where = _storage(size * cols, dev, in_smem * cols)
    gdimx = ceil_div(after_v, bdimx)
    why = [f"persistent buffer {size} bytes per column" + (" (projected)" if project else ""), *why,
           f"TIDx {bdimx} x vector {v} columns per block; TIDy {bdimy} x batches {batches} "
           f"covers the reduction {red_n}", f"{size * cols} bytes per block in {where}"]
    smem = tuple(t.short_name for t in kept_buffers(pb, project)) if where == "shared memory" else ()
    p = ReductionParams(
        tag="Outer persistent kernel heuristic", fastest_dim=False, persistent_kernel=True,
        project_persistent_buffers=project, project_through_results=project and pb.through_results,
        cross_block_inner_reduction=True, unroll_factor_iter_dom=v, vectorize_iter_dom=v > 1,
        batches_per_block_inner_reduction=batches,
        block_dim_inner_reduction=ParallelType.block_y, block_dim_iter_dom=ParallelType.block_x,
        grid_dim_iter_dom=ParallelType.grid_x, smem_persistent_buffers=smem,
        lparams=LaunchParams(gdimx=gdimx, gdimy=1, bdimx=bdimx, bdimy=bdimy,
                             smem=in_smem * cols if smem else 0),
    )
    return record(p, why, info, trace)
