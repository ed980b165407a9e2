"""Heuristic of the combined inner-outer persistent scheduler (layer-norm backward): rows
per step, a persistent grid of one block per SM that loops over its rows, and where the row
inputs live (circular-buffered shared memory on sm_90 and later, shared memory when too
large for registers, registers otherwise). The runtime checks that depend on it are here
too: the bytes of the input buffers and of the outer reductions' partial results
(`inner_outer_sizes`), and an inner Welford read inside the loop over rows
(`welford_in_row_loop`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from engine.analysis.persistent import (
    bytes_per_row,
    is_fastest_dim_reduction,
    reduction_properties,
    reduction_tvs,
)
from engine.ir import exprs as ex
from engine.ir.iterdomain import ParallelType
from engine.ir.logical_map import consumers_of
from engine.ir.tensorview import TensorView
from engine.schedule import inner_outer_multi_wave as mw_launch
from engine.schedule.params import LaunchParams
from engine.schedule.persistent_budget import buffer_bytes, kept_buffers, register_budget
from engine.schedule.persistent_projection import row_ids
from engine.schedule.reduction_heuristics import record, vectorize_factor
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.tools import ceil_div, next_pow2

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.runtime.device import DeviceProperties
    from engine.schedule.runtime_info import SchedulerRuntimeInfo
    from engine.trace import Trace


# Rows of the iteration domain each block handles per step, and circular-buffer stages, of the
# inner-outer schedule whose inputs are staged in shared memory (seed 001's T7: iS116{2} rows,
# iS120{2} stages).
ROWS_PER_STEP = 2

# Rows wider than MULTI_WAVE_ABOVE and at most MULTI_WAVE_UP_TO wide take nvFuser's multi-wave
# launch (inner_outer_multi_wave): one row per block at a time, several blocks an SM. Narrower
# rows take several rows per block. Wider rows keep seed 001's schedule (staged rows, one block
# an SM): the arrays this engine's kernels hold for them left no room for three blocks an SM in
# any norm backward of the corpus on the H200, and with fewer the multi-wave launch was slower.
MULTI_WAVE_ABOVE = 1024
MULTI_WAVE_UP_TO = 2048


STAGES = 2

# Rows so narrow that ROWS_PER_STEP of them take fewer threads than this get more rows a step,
# and blocks enough for this many warps an SM (at most NARROW_MAX_BLOCKS_PER_SM).
NARROW_BLOCK_THREADS = 128
NARROW_WARPS_PER_SM = 16
NARROW_MAX_BLOCKS_PER_SM = 8


def stages_inputs(dev: DeviceProperties) -> bool:
    """Whether the inner-outer schedule stages its row inputs in circular-buffered shared
    memory: on sm_90 and later, as nvFuser does there (with TMA loads). This engine does not
    generate TMA: the circular-buffer pass loads the stages with cp.async
    (engine/lower/circular_buffer.py)."""
    return dev.compute_capability >= (9, 0)


def inner_outer_sizes(fusion: Fusion, info: SchedulerRuntimeInfo, staged: bool = True
                      ) -> tuple[int, int, bool, list[TensorView], bool]:
    """(input buffers bytes per row, partial outer-reduction bytes per row, project, buffers,
    whether they are projected only for the rows to be staged, which `staged` allows)."""
    size, project, pb = buffer_bytes(fusion, info, through_results=False)
    staging = False
    reds = reduction_tvs(fusion)
    ref = next(r for r in reds if is_fastest_dim_reduction(r))
    props = reduction_properties(ref, info)
    wide = all(t.dtype.bits >= b.dtype.bits for b, ins in pb.projectable.items() for t in ins
               if t in fusion.inputs)
    if staged and wide and not project and pb.projectable and stages_inputs(info.device):
        # Staged rows are loaded a step ahead by asynchronous copies, which only inputs can
        # be: float buffers of float inputs (which the size rule keeps, projecting saves no
        # bytes) are projected to the inputs when the rows kept are no more bytes. An input
        # without a row (a norm's weight) is loaded once for all rows (see
        # inner_outer_heuristics), not counted per row. Narrower inputs (bf16 rows of a float
        # buffer) are left to the size rule: projected for staging alone, they ran slower.
        rows_of = row_ids(fusion, ref)
        projected = sum(bytes_per_row(t, info, props.total_iteration_numel, ref)
                        for t in kept_buffers(pb, True)
                        if any(i in rows_of for i in t.domain.logical))
        if projected <= size:
            size, project, staging = projected, True, True
    # Each block accumulates the outer reductions' partial results over its rows: one
    # float row (the inner dimension) per outer reduction.
    n_outer = sum(1 for r in reds if not is_fastest_dim_reduction(r))
    partial = n_outer * props.inner_most_dimension_numel * 4
    return size, partial, project, kept_buffers(pb, project), staging


def inner_outer_heuristics(fusion: Fusion, info: SchedulerRuntimeInfo, trace: Trace | None,
                           multi_wave: bool = True) -> ReductionParams:
    """Rows of MULTI_WAVE_ABOVE to MULTI_WAVE_UP_TO elements take the multi-wave launch when it
    holds enough blocks an SM (unless `multi_wave` is False); otherwise several rows per block
    and one block an SM."""
    dev = info.device
    reds = reduction_tvs(fusion)
    ref = next(r for r in reds if is_fastest_dim_reduction(r))
    props = reduction_properties(ref, info)
    v, why = vectorize_factor(fusion, info, props.inner_most_dimension_numel)
    red_n, it_n = props.total_reduction_numel, max(1, props.total_iteration_numel)
    # Only inputs with a row (an axis of the iteration domain) are copied a row at a time
    # into shared memory; a persistent input without one (a norm's [H] weight, about
    # nothing per row in `size`) is the same for every row: each thread keeps its part in
    # registers across the row loop.
    rows_of = row_ids(fusion, ref)

    def row_inputs_of(kept: list[TensorView]) -> list[TensorView]:
        return [t for t in kept if t in fusion.inputs and any(i in rows_of for i in t.domain.logical)]

    if multi_wave and MULTI_WAVE_ABOVE < red_n <= MULTI_WAVE_UP_TO:
        # One row at a time, not staged a step ahead.
        size, partial, project, kept, _ = inner_outer_sizes(fusion, info, staged=False)
        mw = _multi_wave(fusion, info, red_n, it_n, v, size, partial, row_inputs_of(kept), project, why, trace)
        if mw is not None:
            return mw
    size, partial, project, kept, staging = inner_outer_sizes(fusion, info)
    row_inputs = row_inputs_of(kept)
    after_v = ceil_div(red_n, v)
    bdimx = min(max(next_pow2(ceil_div(after_v, 4)), min(dev.warp_size, next_pow2(after_v))),
                dev.max_threads_per_block // ROWS_PER_STEP)
    batches = ceil_div(after_v, bdimx)
    rows, blocks = _narrow_rows(dev, ceil_div(after_v, batches))
    # A persistent grid of `blocks` blocks an SM that loop over their rows; the outer
    # reductions end with a grid reduction over those blocks.
    gdimy = min(dev.sm_count * blocks, ceil_div(it_n, rows))
    blocks = max(1, min(blocks, ceil_div(gdimy, dev.sm_count)))
    staged = stages_inputs(dev)
    stages = STAGES if staged else 1
    input_bytes = size * rows * stages
    in_smem = staged or input_bytes + partial * rows > register_budget(dev)
    why = [f"inner persistent buffer {size} bytes per row, outer partial results {partial} "
           "bytes per row" + (" (projected)" if project else ""), *why,
           f"TIDx {bdimx} x batches {batches} x vector {v} covers {red_n}; {rows} rows per step "
           f"(TIDy); BIDy {gdimy} blocks ({blocks} an SM) loop over {it_n} rows",
           _inputs_line(dev, staged, in_smem, stages, rows, input_bytes)]
    smem = tuple(t.short_name for t in row_inputs) if in_smem else ()
    p = _params(v, batches, bdimx, rows, gdimy, project, smem, stages if smem else 0,
                input_bytes if smem else 0, blocks)
    p = replace(p, project_for_staging=staging and bool(smem))
    return record(p, why, info, trace)


def _narrow_rows(dev: DeviceProperties, threads_x: int) -> tuple[int, int]:
    """(rows per step, blocks an SM) of the rows schedule whose rows take `threads_x` threads:
    ROWS_PER_STEP and one block an SM, unless the rows are so narrow that such a block holds
    fewer than NARROW_BLOCK_THREADS threads; then more rows a step fill a block that many
    threads wide, and more blocks an SM give it NARROW_WARPS_PER_SM warps (as nvFuser's
    multi-reductions-per-block launch of rows up to 1024 wide: [8000, 264] floats ran 44
    threads a block, one block an SM, 2.9x nvFuser's time on the H200)."""
    if threads_x * ROWS_PER_STEP >= NARROW_BLOCK_THREADS:
        return ROWS_PER_STEP, 1
    rows = min(next_pow2(ceil_div(NARROW_BLOCK_THREADS, threads_x)), dev.max_threads_per_block // threads_x)
    warps = ceil_div(threads_x * rows, dev.warp_size)
    return rows, max(1, min(NARROW_MAX_BLOCKS_PER_SM, NARROW_WARPS_PER_SM // warps))


def _multi_wave(fusion: Fusion, info: SchedulerRuntimeInfo, red_n: int, it_n: int, v: int, size: int,
                partial: int, row_inputs: list[TensorView], project: bool, why: list[str],
                trace: Trace | None) -> ReductionParams | None:
    """One row per block at a time, blocks_per_sm blocks on each SM (engine.schedule.
    inner_outer_multi_wave); the row inputs in shared memory unless registers let more blocks
    share an SM or leave registers to spare. None when no block size fits."""
    dev = info.device
    # Registers per row element: the persistent buffers and the outer reductions' partial
    # results, which each thread accumulates over its rows.
    reg_bits = (size + partial) * 8 // red_n
    input_bits = sum(max(1, t.dtype.bits) for t in row_inputs)
    # Row inputs in shared memory are staged a row ahead where the device stages inputs
    # (STAGES rows a block): the next row's copy is in flight while the block reduces this one.
    stages = STAGES if stages_inputs(dev) else 1
    in_regs = mw_launch.multi_wave(dev, red_n, it_n, v, reg_bits, 0)
    in_smem = (mw_launch.multi_wave(dev, red_n, it_n, v, max(0, reg_bits - input_bits),
                                    input_bits * red_n // 8 * stages)
               if row_inputs else None)
    # Shared memory first on a tie: the kernel holds more than the buffers in registers
    # (the rows' intermediate values across the block reduction), which the estimate leaves out.
    choices = [(c, smem) for c, smem in ((in_smem, True), (in_regs, False)) if c is not None]
    if not choices:
        return None
    c, smem = min(choices, key=lambda cs: mw_launch.rank(cs[0]))
    gdimy = min(c.gdimy, it_n)
    smem_bytes = input_bits * red_n // 8 * stages if smem else 0
    where = (f"row inputs {', '.join(t.short_name for t in row_inputs)} in shared memory"
             + (f", {stages} circular-buffer stages of one row" if stages > 1 else "")
             + f", {smem_bytes} bytes a block" if smem else "buffers in registers")
    why = [f"inner persistent buffer {size} bytes per row, outer partial results {partial} "
           "bytes per row" + (" (projected)" if project else ""), *why,
           f"multi-wave: {c.threads} threads x batch {c.batch} x vector {v} cover {red_n}, one row "
           f"per block at a time; {where}; about {c.registers_needed} registers per thread of the "
           f"{c.registers_available} {c.warps_per_sm} warps an SM allow: {c.blocks_per_sm} blocks "
           f"an SM, BIDy {gdimy} blocks loop over {it_n} rows"]
    names = tuple(t.short_name for t in row_inputs) if smem else ()
    p = _params(v, c.batch, c.threads, 1, gdimy, project, names, stages if smem and stages > 1 else 0, smem_bytes,
                max(1, min(c.blocks_per_sm, ceil_div(gdimy, dev.sm_count))))
    return record(p, why, info, trace)


def _params(v: int, batches: int, bdimx: int, rows: int, gdimy: int, project: bool,
            smem: tuple[str, ...], stages: int, smem_bytes: int, blocks_per_sm: int) -> ReductionParams:
    """The combined schedule's parameters: `rows` rows per step on TIDy (several reductions a
    block when more than one), the persistent grid on BIDy, `blocks_per_sm` of its blocks an SM."""
    return ReductionParams(
        tag="InnerOuter Persistent Heuristic", fastest_dim=True, persistent_kernel=True,
        project_persistent_buffers=project, combined_inner_outer=True,
        cross_block_inner_reduction=True, unroll_factor_inner_reduction=v,
        vectorize_inner_reduction=v > 1, batches_per_block_inner_reduction=batches,
        batches_per_block_outer_reduction=batches,
        cross_block_outer_reduction=True, cross_grid_outer_reduction=gdimy > 1,
        block_dim_outer_reduction=ParallelType.block_y,
        grid_dim_outer_reduction=ParallelType.grid_y if gdimy > 1 else ParallelType.serial,
        multiple_reds_per_blk=rows > 1, block_dim_inner_reduction=ParallelType.block_x,
        block_dim_iter_dom=ParallelType.block_y if rows > 1 else ParallelType.serial,
        grid_dim_iter_dom=ParallelType.grid_y,
        smem_persistent_buffers=smem, circular_buffer_stages=stages, rows_per_step=rows,
        blocks_per_sm=blocks_per_sm,
        lparams=LaunchParams(gdimx=1, gdimy=gdimy, bdimx=bdimx, bdimy=rows, smem=smem_bytes),
    )


def _inputs_line(dev: DeviceProperties, staged: bool, in_smem: bool, stages: int, rows: int,
                 input_bytes: int) -> str:
    """The derivation's line on where the row inputs live. How the stages are loaded is the
    lowering's decision (cp.async where the circular-buffer pass pipelines them), which the
    compiled launch's shared-memory breakdown reports."""
    if not in_smem:
        return "inputs in registers"
    cc = ".".join(str(x) for x in dev.compute_capability)
    why = f"compute capability {cc} >= 9.0: " if staged else "too large for registers: "
    if stages > 1:
        return (f"{why}inputs staged in shared memory, {stages} circular-buffer stages of {rows} rows, "
                f"{input_bytes} bytes")
    return f"{why}inputs in shared memory, one stage of {rows} rows (not circular-buffered), {input_bytes} bytes"


def _row_steps(p: ReductionParams, it_n: int) -> int:
    """Iterations of the serial loop over each block's rows in the inner-outer schedule:
    the iteration domain split by rows per step, the grid and the stages, as
    schedule_inner_outer splits it."""
    rows = ceil_div(max(1, it_n), p.rows_per_step)
    return ceil_div(ceil_div(rows, p.lparams.gdimy), max(1, p.circular_buffer_stages))


def welford_in_row_loop(fusion: Fusion, info: SchedulerRuntimeInfo) -> str | None:
    """An inner Welford whose result is read per row needs that read inside the serial
    loop over each block's rows, but a Welford's sibling outputs are never inlined: with
    more than one step the loop would have to close before the Welford and reopen after."""
    reds = reduction_tvs(fusion)
    for red in reds:
        e = red.definition
        if not (is_fastest_dim_reduction(red) and isinstance(e, ex.WelfordOp)):
            continue
        if not any(consumers_of(o) for o in e.outputs if isinstance(o, TensorView)):
            continue
        p = inner_outer_heuristics(fusion, info, None)
        steps = _row_steps(p, reduction_properties(red, info).total_iteration_numel)
        if steps > 1:
            return (f"inner Welford {red.short_name} is read in the loop over each block's rows "
                    f"({steps} steps), but its outputs cannot be inlined into it")
    return None
