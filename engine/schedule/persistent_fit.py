"""Persistent launches whose per-thread arrays fit the registers their block allows.

The persistent heuristics pick a block shape for the row (more threads, fewer batches each)
from the buffer sizes. Once the segment is scheduled, its local arrays are counted
(engine.schedule.register_fit); when they need more registers than a block of that many
threads can give each thread (what does not fit is spilled, or never reaches registers:
local memory), `refit` walks the same heuristic's other block shapes, in its order of
preference, to the first that fits, and the compile schedules a fresh copy of the segment
with it: nvFuser's normalization heuristics bound the persistent batch by the registers per
thread the same way (register persistence, then shared-memory persistence). A family of
candidates shares one measurement (the arrays per element a thread holds) taken on its first
candidate; keeping the buffers in shared memory realizes other arrays, so such candidates
form a family of their own. When no candidate fits, RegisterFitError: the compile refuses the
scheduler for every group holding the segment's reductions and segments the fusion again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from engine.analysis.persistent import has_exp_op
from engine.errors import RegisterFitError
from engine.ir.iterdomain import ParallelType
from engine.runtime.registers import REGISTER_OVERHEAD, register_cap, registers_needed
from engine.schedule.reduction import ReductionParams
from engine.schedule.register_fit import array_bytes, realized_array_bytes
from engine.schedule.tools import ceil_div, next_pow2

if TYPE_CHECKING:
    from engine.ir.fusion import Fusion
    from engine.runtime.device import DeviceProperties
    from engine.schedule.runtime_info import SchedulerRuntimeInfo

Schedule = Callable[["Fusion", ReductionParams, None], None]


# Registers a thread of an inner persistent kernel with an exp needs besides its arrays when
# its row is loaded in vectors: nvFuser's inner persistent heuristic reserves 32 for fusions
# with an exp (normalization_inner_non_tma.cpp). Other kernels keep REGISTER_OVERHEAD: a row
# loaded one element at a time costs an address and a predicate per element that the arrays
# do not count (the softmax and cross entropy of GPT-2's odd vocabulary, 50 elements a
# thread, spill 48-96 bytes at 32), and so do the several buffers of a norm backward.
INNER_OVERHEAD_EXP = 32


def fit_overhead(fusion: Fusion, p: ReductionParams) -> int:
    """Registers besides the per-thread arrays that `refit` reserves for `p`'s kernel."""
    if not p.fastest_dim or p.combined_inner_outer or p.unroll_factor_inner_reduction < 2:
        return REGISTER_OVERHEAD
    return INNER_OVERHEAD_EXP if has_exp_op(fusion) else REGISTER_OVERHEAD


def threads(p: ReductionParams) -> int:
    return max(1, p.lparams.bdimx) * max(1, p.lparams.bdimy)


def row_elements(p: ReductionParams) -> int:
    """Elements of one persistent row each thread holds (inner and inner-outer schedules)."""
    return p.batches_per_block_inner_reduction * p.unroll_factor_inner_reduction


def column_elements(p: ReductionParams) -> int:
    """Elements of the persistent columns each thread holds (outer schedules)."""
    return p.batches_per_block_inner_reduction * p.unroll_factor_iter_dom


def storage_families(p: ReductionParams, names: tuple[str, ...], size: int, rows: int,
                     shapes: Callable[[ReductionParams], list[ReductionParams]],
                     smem_limit: int) -> list[list[ReductionParams]]:
    """The block shapes of `p`'s heuristic with the persistent buffers in registers, then with
    `names` in shared memory (`size` bytes per row, or per column, times the `rows` or
    columns of `p`'s block, scaled with each shape's); the heuristic's own choice first."""
    in_regs = replace(p, smem_persistent_buffers=(), lparams=replace(p.lparams, smem=0))
    families = [shapes(in_regs)]
    if names:
        in_smem = replace(p, smem_persistent_buffers=names, lparams=replace(p.lparams, smem=size * rows))
        families.append([q for q in shapes(in_smem) if q.lparams.smem <= smem_limit])
    if p.smem_persistent_buffers:
        families.reverse()
    return families


def refit(scheduled: Fusion, env: dict, fresh: Fusion, info: SchedulerRuntimeInfo, p: ReductionParams,
          families: Sequence[Sequence[ReductionParams]], elements: Callable[[ReductionParams], int],
          schedule: Schedule, overhead: int = REGISTER_OVERHEAD) -> tuple[ReductionParams, str] | None:
    """None when the arrays of `scheduled` (`fresh` scheduled with `p`, at the sizes of `env`)
    fit the registers per thread of `p`'s block; else the first candidate, family by family,
    whose arrays fit, and a line saying so. A family is measured on its first candidate: `p`'s
    own (its storage, registers or shared memory) from `scheduled`, another on a copy of
    `fresh` scheduled with it; `overhead`: registers a thread needs besides its arrays.
    RegisterFitError when no candidate fits."""
    dev = info.device
    tried: list[str] = []
    for family in families:
        if not family:
            continue
        base = family[0]
        share = elements(base)
        if base.smem_persistent_buffers == p.smem_persistent_buffers:
            long, short = array_bytes(scheduled, env, elements(p))
            share = elements(p)
        else:
            long, short = realized_array_bytes(fresh, info, base, schedule, share)
        for c in family:
            held = -(-long * elements(c) // max(1, share)) + short
            need, cap = registers_needed(held, overhead), register_cap(dev, threads(c) * max(1, c.blocks_per_sm))
            if need <= cap:
                if c == p:
                    return None
                where = "shared memory" if c.smem_persistent_buffers else "registers"
                blocks = f" ({c.blocks_per_sm} blocks an SM)" if c.blocks_per_sm > 1 else ""
                return c, (f"per-thread arrays of about {held} bytes with buffers in {where}: {need} "
                           f"registers of the {cap} a block of {threads(c)} threads{blocks} allows (the "
                           f"heuristic's {p.lparams.bdimx}x{p.lparams.bdimy} threads would spill)")
            tried.append(f"{c.lparams.bdimx}x{c.lparams.bdimy} threads"
                         + (" (shared memory)" if c.smem_persistent_buffers else "") + f": {need} > {cap} registers")
    raise RegisterFitError("no block shape keeps the persistent arrays in registers ("
                        + "; ".join(tried[:6]) + ("; ..." if len(tried) > 6 else "") + ")")


# Elements of one row a thread may hold in a fallback shape with fewer threads (nvFuser
# caps the inner persistent batch at 10 to 16 vectors): longer arrays, with the unrolled
# address arithmetic of their loads and stores, spill whatever the register estimate says.
MAX_ROW_ELEMENTS = 64


# The same for the combined inner-outer schedule, whose threads also hold the outer
# reductions' partial results for each element of their share: on the H200, norm backwards
# given 48 elements a thread by a 128 x 2 fallback used all 255 registers and spilled, where
# 16 to 24 elements a thread of one row ran without spilling (and 1.2x to 5.5x faster).
MAX_INNER_OUTER_ROW_ELEMENTS = 32


def _pow2_down(hi: int, lo: int) -> list[int]:
    out = []
    n = hi
    while n >= lo:
        out.append(n)
        n //= 2
    return out


def inner_shapes(p: ReductionParams, red_n: int, it_n: int, dev: DeviceProperties) -> list[ReductionParams]:
    """`p` and the inner-persistent block shapes after it, for each number of rows per block
    from `p`'s down to one: more threads along the row (fewer batches each), then fewer (a
    block of fewer threads may give each more registers)."""
    v = p.unroll_factor_inner_reduction
    after_v = ceil_div(red_n, v)
    out = [p]
    bdimy = max(1, p.lparams.bdimy)
    x0 = p.lparams.bdimx
    for by in _pow2_down(bdimy, 1):
        top = min(dev.max_threads_per_block // by, max(x0, next_pow2(after_v)))
        wider = [bx for bx in reversed(_pow2_down(top, x0)) if bx * by <= dev.max_threads_per_block]
        for bx in wider + _pow2_down(x0 // 2, min(dev.warp_size, x0)):
            if (bx, by) == (x0, bdimy):
                continue
            if ceil_div(after_v, bx) * v > max(row_elements(p), MAX_ROW_ELEMENTS):
                continue  # arrays this long are not kept in registers (ptxas spills them)
            smem = p.lparams.smem // bdimy * by if p.lparams.smem else 0
            out.append(replace(
                p, batches_per_block_inner_reduction=ceil_div(after_v, bx), multiple_reds_per_blk=by > 1,
                block_dim_iter_dom=ParallelType.block_y if by > 1 else ParallelType.serial,
                lparams=replace(p.lparams, bdimx=bx, bdimy=by, gdimx=ceil_div(it_n, by), smem=smem)))
    return out


def outer_shapes(p: ReductionParams, red_n: int, it_n: int, dev: DeviceProperties) -> list[ReductionParams]:
    """`p` and the outer-persistent block shapes after it, widest column tile first: fewer
    columns per block (threads, then vector) let more threads split the reduction, each
    keeping fewer of its rows."""
    shapes = []
    for bx in _pow2_down(p.lparams.bdimx, min(8, p.lparams.bdimx)):
        for v in _pow2_down(p.unroll_factor_iter_dom, 1):
            if it_n % v:
                continue
            by = min(next_pow2(ceil_div(red_n, 4)), max(1, dev.max_threads_per_block // bx))
            shapes.append((bx * v, v, bx, by))
    shapes.sort(key=lambda s: (-s[0], -s[1]))
    out = [p]
    for cols, v, bx, by in shapes:
        if (bx, v) == (p.lparams.bdimx, p.unroll_factor_iter_dom):
            continue
        smem = p.lparams.smem // max(1, p.lparams.bdimx * p.unroll_factor_iter_dom) * cols if p.lparams.smem else 0
        out.append(replace(
            p, unroll_factor_iter_dom=v, vectorize_iter_dom=v > 1,
            batches_per_block_inner_reduction=ceil_div(red_n, by),
            lparams=replace(p.lparams, bdimx=bx, bdimy=by, gdimx=ceil_div(ceil_div(it_n, v), bx), smem=smem)))
    return out


def inner_outer_shapes(p: ReductionParams, red_n: int, it_n: int, dev: DeviceProperties) -> list[ReductionParams]:
    """`p` and the combined schedule's block shapes after it: the same rows per step with
    fewer threads along the row, then one row per step."""
    v = p.unroll_factor_inner_reduction
    after_v = ceil_div(red_n, v)
    rows0 = p.rows_per_step
    out = [p]
    for rows in _pow2_down(rows0, 1):
        top = min(dev.max_threads_per_block // rows, max(p.lparams.bdimx, next_pow2(after_v)))
        for bx in _pow2_down(top, min(dev.warp_size, p.lparams.bdimx)):
            if (bx, rows) == (p.lparams.bdimx, rows0):
                continue
            batches = ceil_div(after_v, bx)
            if batches * v > max(row_elements(p), MAX_INNER_OUTER_ROW_ELEMENTS):
                continue  # spills whatever the register estimate says
            gdimy = min(dev.sm_count, ceil_div(it_n, rows))
            smem = p.lparams.smem // rows0 * rows if p.lparams.smem else 0
            out.append(replace(
                p, batches_per_block_inner_reduction=batches, batches_per_block_outer_reduction=batches,
                rows_per_step=rows, cross_grid_outer_reduction=gdimy > 1, blocks_per_sm=1,
                grid_dim_outer_reduction=ParallelType.grid_y if gdimy > 1 else ParallelType.serial,
                lparams=replace(p.lparams, bdimx=bx, bdimy=rows, gdimy=gdimy, smem=smem)))
    return out


def fewer_blocks(p: ReductionParams, least: int, it_n: int, dev: DeviceProperties) -> list[ReductionParams]:
    """A multi-wave launch `p` and the same block with fewer blocks an SM, down to `least`
    (each thread may then have more registers)."""
    out = [p]
    for blocks in range(p.blocks_per_sm - 1, least - 1, -1):
        gdimy = min(blocks * dev.sm_count, it_n)
        out.append(replace(p, blocks_per_sm=blocks, cross_grid_outer_reduction=gdimy > 1,
                           lparams=replace(p.lparams, gdimy=gdimy)))
    return out
