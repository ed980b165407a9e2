"""The outer (non-persistent) reduction's block and grid shape, after nvFuser's
outerReductionHeuristic: a block reduction (each block reduces whole columns, no grid
reduction) and a grid reduction (the rows split over blockIdx.y as well) are both derived, and
the block one is taken when it keeps the SMs busy (nvFuser's isBetterThan); otherwise the
grid reduction runs in the shape this engine measured (engine_grid).

Names follow nvFuser's OuterReductionParams: `bdimx` threads and `iter_unroll` (the vector)
along the iteration (contiguous) axis, `gidim` blocks over it; `bdimy` threads, `redu_unroll`
and `grdim` blocks along the reduction. The derivation states the bytes an SM keeps in flight (the loads of
the threads it can hold) beside what the chip's bandwidth and latency call for (Little's law).

This engine unrolls a thread's serial loop over the rows in the generated code (kir's
`#pragma unroll 4`) rather than splitting the reduction axis by `redu_unroll`: the factor
shapes the derivation as in nvFuser and is reported, not scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.ir.iterdomain import ParallelType
from engine.runtime.device import DeviceProperties
from engine.schedule.params import LaunchParams
from engine.schedule.reduction_params import ReductionParams
from engine.schedule.tools import ceil_div, next_pow2, prev_pow2

BITS_PER_REGISTER = 32
MAX_BLOCKS_PER_SM = 32  # resident blocks of an SM (compute capability 8.x and 9.x)


@dataclass
class OuterShape:
    iteration: int
    reduction: int
    bdimx: int = 1
    iter_unroll: int = 1
    gidim: int = 1
    bdimy: int = 1
    redu_unroll: int = 1
    grdim: int = 1

    def i_avail(self) -> int:
        return ceil_div(self.iteration, self.gidim * self.bdimx * self.iter_unroll)

    def r_avail(self) -> int:
        return ceil_div(self.reduction, self.grdim * self.bdimy * self.redu_unroll)

    def text(self) -> str:
        return (f"block {self.bdimx}x{self.bdimy}, grid {self.gidim}x{self.grdim}, vector {self.iter_unroll}, "
                f"reduction unroll {self.redu_unroll}")


def _round_down_pow2_or_multiple(x: int, multiple: int) -> int:
    if x > multiple:
        return (x // multiple) * multiple
    return prev_pow2(x)


def max_unroll(n_inputs: int, dtype_bits: int, mufu: bool) -> int:
    """Vector x unroll elements a thread may hold, from the registers set aside for loads:
    8 with expensive special functions (threads over instruction-level parallelism), 32
    otherwise, fewer with many inputs (nvFuser's buffer_reg_count / input_factor)."""
    regs, factor = (8, n_inputs >> 2) if mufu else (32, n_inputs)
    return ceil_div(regs * BITS_PER_REGISTER // max(1, dtype_bits), prev_pow2(max(factor, 1)))


def block_outer(red_n: int, it_n: int, vector: int, unroll_max: int, dev: DeviceProperties) -> OuterShape:
    """nvFuser's getBlockOuterReduction: narrow blocks along the columns, as many as the SMs,
    each reducing its columns over all the rows."""
    p = OuterShape(it_n, red_n)
    sms_pow2 = prev_pow2(dev.sm_count)
    p.bdimx = min(8, p.i_avail())
    p.gidim = min(min(32, sms_pow2), p.i_avail())
    while p.i_avail() > 1:
        if p.i_avail() % 2 == 0 and p.iter_unroll * 2 <= vector:
            p.iter_unroll *= 2
        if p.i_avail() > 1:
            p.gidim *= 2
        if p.iter_unroll == vector:
            break
    p.gidim = min(ceil_div(it_n, p.bdimx * p.iter_unroll), dev.sm_count)
    bx = ceil_div(it_n, p.gidim * p.iter_unroll)
    p.bdimx = min(min(next_pow2(bx), ceil_div(bx, 32) * 32), dev.max_threads_per_block)
    p.gidim = ceil_div(it_n, p.bdimx * p.iter_unroll)
    p.redu_unroll = min(p.r_avail(), max(1, unroll_max // p.iter_unroll))
    p.bdimy = min(p.r_avail(), dev.max_threads_per_block // p.bdimx)
    while p.bdimy * p.bdimx * 2 <= dev.max_threads_per_block and p.gidim // 2 >= sms_pow2:
        p.bdimx *= 2
        p.gidim //= 2
    return p


def grid_outer(red_n: int, it_n: int, n_inputs: int, dtype_bits: int, vector: int, unroll_max: int,
               dev: DeviceProperties) -> OuterShape:
    """nvFuser's getGridOuterReduction: warps along the columns, the rows split over blocks
    (blockIdx.y) to reach a few waves of blocks."""
    n_elems = red_n * it_n
    n_waves = 8 if n_elems >= 64 * 1024 * 1024 else 4
    fits_l2 = n_elems * dtype_bits * n_inputs < dev.l2_cache_bytes * 8
    warp = 16 if fits_l2 else 32
    threads, blocks, unroll = warp, min(ceil_div(dev.sm_count, 4), ceil_div(n_elems, warp)), 1

    def avail() -> int:
        return ceil_div(n_elems, threads * blocks * unroll)

    quarter = ceil_div(dev.max_threads_per_sm, 4)
    while avail() > 1 and (threads < quarter or blocks < dev.sm_count * n_waves or unroll < unroll_max):
        if threads < quarter:
            threads *= 2
        if blocks < dev.sm_count * n_waves and avail() > 1:
            blocks *= 2
        if blocks > dev.sm_count and unroll < unroll_max and avail() > 1:
            unroll *= 2
    if unroll < unroll_max and avail() > 1:
        unroll = min(avail(), unroll_max)
    unroll = prev_pow2(unroll)

    p = OuterShape(it_n, red_n)
    p.bdimx = min(warp, it_n)
    if warp < it_n < 2 * warp and (it_n % p.bdimx) * 4 < p.bdimx * 3:
        p.bdimx = it_n
    max_iter_unroll = min(vector, min(p.i_avail(), unroll))
    while it_n % (p.bdimx * p.iter_unroll * 2) == 0 and p.iter_unroll * 2 <= max_iter_unroll:
        p.iter_unroll *= 2
    if p.i_avail() > dev.sm_count:
        p.bdimx = min(ceil_div(it_n, p.iter_unroll * dev.sm_count), threads)
    p.bdimx = next_pow2(p.bdimx)
    p.bdimy = _round_down_pow2_or_multiple(min(max(1, threads // p.bdimx), red_n), 8)
    if p.iter_unroll < unroll_max and p.r_avail() > 2:
        p.redu_unroll = prev_pow2(min(p.r_avail(), max(1, unroll_max // p.iter_unroll)))
    p.gidim = p.i_avail()
    p.grdim = min(p.r_avail(), ceil_div(dev.sm_count, p.gidim))
    if p.gidim * p.grdim < blocks:
        p.grdim = min(ceil_div(p.r_avail() * p.grdim, 2), ceil_div(blocks, p.gidim))
    if p.r_avail() > 16 and ceil_div(it_n, warp) < dev.sm_count * 2:
        # Blocks striding over at most 128 KiB of rows between their serial steps.
        stride_bits = dtype_bits * p.bdimx * p.bdimy * p.iter_unroll * p.redu_unroll
        remainder = max(1, (128 * 1024 * 8) // stride_bits)
        p.grdim = ceil_div(red_n, remainder * p.bdimy * p.redu_unroll)
    total = p.grdim * p.gidim
    if total < dev.sm_count * 16 and total % dev.sm_count and total > dev.sm_count:
        waves = max(total // dev.sm_count, 1)
        new = max(waves * dev.sm_count // p.gidim, 1)
        if (p.grdim - new) * 4 <= p.grdim and new * p.gidim % dev.sm_count > total % dev.sm_count:
            p.grdim = new
    return p


def engine_grid(red_n: int, it_n: int, vector: int, dev: DeviceProperties) -> OuterShape:
    """The grid reduction's shape as this engine measured it (outer sum fp32 [32768, 4096] at
    98% of copy on the H100 and H200): blocks of up to 128 x 2 threads, narrowed to a warp
    when columns are few and the reduction short, and the rows split over blockIdx.y for two
    blocks an SM when the columns leave SMs idle. nvFuser's grid shapes (16 to 64 threads of
    a block over the rows) had ptxas spill the grouped grid reduction's combine."""
    p = OuterShape(it_n, red_n, iter_unroll=vector)
    after_v = ceil_div(it_n, vector)
    p.bdimx = min(next_pow2(after_v), 128)
    p.bdimy = min(max(1, 256 // p.bdimx), next_pow2(red_n))
    p.gidim = ceil_div(after_v, p.bdimx)
    serial = ceil_div(red_n, p.bdimy)
    while p.gidim < dev.sm_count and p.bdimx > 32 and serial < 32:
        p.bdimx //= 2
        p.bdimy = min(max(1, 256 // p.bdimx), next_pow2(red_n))
        p.gidim = ceil_div(after_v, p.bdimx)
        serial = ceil_div(red_n, p.bdimy)
    if p.gidim < dev.sm_count and serial >= 32:
        p.grdim = min(prev_pow2(serial // 8), max(1, prev_pow2(dev.sm_count * 2 // p.gidim)))
    return p


# A Welford grid reduction combines each column's partials in the last block to arrive, one
# gridWelford per vector element, its bdimy threads of the column each combining a share of the
# grdim partials one after another: at most this many each.
WELFORD_PARTIALS_PER_THREAD = 8


def welford_grid(red_n: int, it_n: int, vector: int, dev: DeviceProperties) -> OuterShape:
    """The grid reduction's shape for a Welford: blocks of 256 threads, at most a warp of them
    along the columns and the rest over the rows, so that the last block has many threads for
    each column's partials; about two blocks an SM, their rows split over blockIdx.y up to
    WELFORD_PARTIALS_PER_THREAD partials for each of those threads. Where that cap leaves
    fewer blocks than two an SM, fewer threads go along the columns (down to 8), more over the
    rows. (engine_grid's blocks of 128 x 2 would leave the last block two threads a column for
    a hundred partials or more, combined one after another.)"""
    p = OuterShape(it_n, red_n, iter_unroll=vector)
    after_v = ceil_div(it_n, vector)
    want = dev.sm_count * 2

    def shape(bdimx: int) -> None:
        p.bdimx = bdimx
        p.bdimy = min(max(1, 256 // bdimx), next_pow2(red_n))
        p.gidim = ceil_div(after_v, bdimx)

    shape(min(next_pow2(after_v), 32))
    while p.bdimx > 8 and p.gidim * WELFORD_PARTIALS_PER_THREAD * p.bdimy < want and p.bdimy < next_pow2(red_n):
        shape(p.bdimx // 2)
    serial = ceil_div(red_n, p.bdimy)
    if serial >= 32:
        p.grdim = max(1, min(prev_pow2(serial // 8), prev_pow2(max(1, want // p.gidim)),
                             WELFORD_PARTIALS_PER_THREAD * p.bdimy))
    return p


def block_is_better(block: OuterShape, grid: OuterShape, sm_count: int) -> bool:
    """nvFuser's isBetterThan: the block reduction when its blocks fill at least 90% of the
    last wave and it vectorizes as widely, or when it has as many blocks."""
    f_wave = block.gidim / sm_count
    if f_wave / -(-f_wave // 1) >= 0.9 and block.iter_unroll >= grid.iter_unroll:
        return True
    return block.gidim * block.grdim >= grid.gidim * grid.grdim


def little_bytes_per_sm(dev: DeviceProperties) -> int:
    """Bytes an SM must keep in flight for the chip to reach its bandwidth: bandwidth x
    latency (Little's law), shared by the SMs."""
    return int(dev.memory_bandwidth_gbps * dev.memory_latency_ns / dev.sm_count)


def outer_reduction_params(red_n: int, it_n: int, n_inputs: int, dtype_bits: int, vector: int, mufu: bool,
                           dev: DeviceProperties, tag: str, why: list[str], welford: bool = False) -> ReductionParams:
    """The outer reduction's ReductionParams, its derivation appended to `why`; `welford`: the
    reduction is a Welford (its grid reduction takes welford_grid's shape)."""
    unroll_max = max_unroll(n_inputs, dtype_bits, mufu)
    why.append(f"loads a thread may hold: {unroll_max} elements ({n_inputs} inputs of {dtype_bits} bits"
               + (", expensive special functions" if mufu else "") + ")")
    grid = grid_outer(red_n, it_n, n_inputs, dtype_bits, vector, unroll_max, dev)
    block = block_outer(red_n, it_n, vector, unroll_max, dev)
    use_block = block_is_better(block, grid, dev.sm_count)
    why.append(f"block reduction: {block.text()}")
    why.append(f"grid reduction: {grid.text()}")
    if use_block:
        p = block
        why.append("block reduction taken (nvFuser's isBetterThan)")
    elif welford:
        p = welford_grid(red_n, it_n, vector, dev)
        why.append("grid reduction taken (nvFuser's isBetterThan), in this engine's shape for a Welford "
                   f"(at most {WELFORD_PARTIALS_PER_THREAD} partials a thread of the last block): {p.text()}")
    else:
        p = engine_grid(red_n, it_n, vector, dev)
        why.append(f"grid reduction taken (nvFuser's isBetterThan), in this engine's shape: {p.text()}")
    threads = p.bdimx * p.bdimy
    # nvFuser caps the registers for half the SM's threads (maxrregcount 64 with blocks of
    # 512); a capped kernel may spill, which this engine does not allow: the launch bounds
    # ask for one block, and ptxas may use what that leaves.
    resident = max(1, min(MAX_BLOCKS_PER_SM, dev.max_threads_per_sm // threads))
    in_flight = resident * threads * n_inputs * p.iter_unroll * dtype_bits // 8
    why.append(f"at most {resident} block(s) of {threads} threads per SM: {in_flight} bytes of loads in "
               f"flight per SM per step (Little's law asks {little_bytes_per_sm(dev)}: "
               f"{dev.memory_bandwidth_gbps:.0f} GB/s x {dev.memory_latency_ns:.0f} ns / {dev.sm_count} SMs)")
    return ReductionParams(
        tag=tag, fastest_dim=False,
        cross_block_inner_reduction=p.bdimy > 1 or p.grdim > 1, cross_grid_inner_reduction=p.grdim > 1,
        unroll_factor_iter_dom=p.iter_unroll, vectorize_iter_dom=p.iter_unroll > 1,
        multiple_reds_per_blk=p.bdimx > 1 or p.iter_unroll > 1,
        block_dim_inner_reduction=ParallelType.block_y if p.bdimy > 1 else ParallelType.serial,
        grid_dim_inner_reduction=ParallelType.grid_y if p.grdim > 1 else ParallelType.serial,
        block_dim_iter_dom=ParallelType.block_x, grid_dim_iter_dom=ParallelType.grid_x,
        lparams=LaunchParams(gdimx=p.gidim, gdimy=p.grdim, bdimx=p.bdimx, bdimy=p.bdimy),
    )
