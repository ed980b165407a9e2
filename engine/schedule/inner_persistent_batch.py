"""The persistent batch of an inner persistent kernel: how many vectors of its row each thread
keeps, and so the threads along the row and the rows per block.

nvFuser's 2D register heuristic (normalization_inner_non_tma.cpp, innerPersistentHeuristic2D):
every batch size from the fewest a block of at most 1024 threads allows to the most that keeps
at least four warps a row and the buffers within the registers of the target occupancy is
rated by an occupancy model (registers per thread for 28 warps an SM, the partitions and
allocation granularity of the register file), then the best is chosen: the target occupancy
met, the row divided evenly among the threads (no predicated tail), registers left beside the
buffers and at most 512 threads, fewer waves (on GPUs whose bandwidth is high for their
arithmetic, the H200 and the A100 among them), higher occupancy, then the larger batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.schedule.tools import ceil_div

if TYPE_CHECKING:
    from engine.runtime.device import DeviceProperties

TARGET_WARPS_PER_SM = 28
_PARTITIONS = 4  # warp schedulers (register file partitions) of an SM, sm_80 and sm_90
_REG_GRANULE = 256  # registers are allocated to a warp in 256s
_MAX_REGS = 255
_OPT_MAX_THREADS = 512


def high_bandwidth_flops_ratio(dev: DeviceProperties) -> bool:
    """Bandwidth over FP32 throughput above 0.07 bytes a FLOP (nvFuser's reference ratio):
    the A100 and the H200, not the H100."""
    return dev.peak_fp32_gflops > 0 and dev.memory_bandwidth_gbps / dev.peak_fp32_gflops > 0.07


def regs_per_thread(threads_per_sm: int, dev: DeviceProperties) -> int:
    """Registers each thread may have when `threads_per_sm` threads share an SM."""
    warps = ceil_div(max(1, threads_per_sm), dev.warp_size)
    per_warp = dev.registers_per_sm // _PARTITIONS // ceil_div(warps, _PARTITIONS)
    return min(_MAX_REGS, per_warp // _REG_GRANULE * _REG_GRANULE // dev.warp_size)


def threads_per_sm(regs: int, dev: DeviceProperties) -> int:
    """Threads an SM holds when each takes `regs` registers."""
    per_warp = ceil_div(regs * dev.warp_size, _REG_GRANULE) * _REG_GRANULE
    return dev.registers_per_sm // per_warp // _PARTITIONS * _PARTITIONS * dev.warp_size


@dataclass(frozen=True)
class BatchChoice:
    batches: int
    bdimx: int  # threads along the row: the row's vectors over the batches, rounded up
    bdimy: int  # rows per block
    registers: int  # registers per thread the occupancy model gives
    warps_per_sm: int  # the occupancy it reaches
    waves: int
    tails: int  # idle thread slots of the last batch


def _rate(after_v: int, it_n: int, max_rows: int, min_threads: int, bits_per_batch: int,
          overhead: int, batches: int, dev: DeviceProperties) -> BatchChoice:
    bdimx = ceil_div(after_v, batches)
    bdimy = min(max(1, min_threads // bdimx), max_rows)
    padded = ceil_div(bdimx, dev.warp_size) * dev.warp_size
    block = (padded if bdimx > 16 and padded * bdimy <= dev.max_threads_per_block else bdimx) * bdimy
    # Registers and occupancy: the target occupancy when the buffers fit the registers it
    # leaves, else as many threads as the buffers allow.
    blocks = ceil_div(TARGET_WARPS_PER_SM * dev.warp_size, block)
    if block * blocks > dev.max_threads_per_sm:
        blocks = dev.max_threads_per_sm // block
    need = bits_per_batch * batches // 32 + overhead
    per_sm = block * blocks
    if regs_per_thread(per_sm, dev) < need:
        per_sm = min(max(1, threads_per_sm(need, dev) // block) * block, dev.max_threads_per_sm)
    warps = per_sm // dev.warp_size
    blocks_per_sm = max(1, warps * dev.warp_size // block)
    return BatchChoice(batches, bdimx, bdimy, regs_per_thread(per_sm, dev), warps,
                       ceil_div(it_n, dev.sm_count * blocks_per_sm), batches * bdimx - after_v)


def choose_batches(after_v: int, it_n: int, buffer_bits_per_row: int, red_n: int, vector: int,
                   has_exp: bool, dev: DeviceProperties) -> tuple[BatchChoice, list[BatchChoice]]:
    """The chosen batch and every candidate rated. `after_v`: the row's vectors;
    `buffer_bits_per_row`: the persistent buffers' bits per row (projected where they are)."""
    high = high_bandwidth_flops_ratio(dev)
    overhead = 32 if has_exp else 16
    warp = dev.warp_size
    min_threads = 4 * warp if it_n >= dev.sm_count else dev.max_threads_per_block
    bits_per_batch = max(1, buffer_bits_per_row * vector // max(1, red_n))
    lo = ceil_div(after_v, dev.max_threads_per_block)
    target_threads = min(TARGET_WARPS_PER_SM * warp, dev.max_threads_per_sm)
    by_regs = max(1, (regs_per_thread(target_threads, dev) - overhead) * 32 // bits_per_batch)
    hi = max(lo, min(ceil_div(after_v, min_threads), min(12 if high else 10, by_regs)))
    max_rows = max(1, min(dev.registers_per_sm * 32 // max(1, buffer_bits_per_row), ceil_div(it_n, dev.sm_count)))
    cands = [_rate(after_v, it_n, max_rows, min_threads, bits_per_batch, overhead, b, dev)
             for b in range(lo, hi + 1)]
    best_occ = max(cands, key=lambda c: c.warps_per_sm)
    if best_occ.warps_per_sm < TARGET_WARPS_PER_SM:
        return best_occ, cands
    best = cands[0]
    for c in cands[1:]:
        if _better(c, best, overhead, bits_per_batch, high, has_exp, warp):
            best = c
    return best, cands


def _better(a: BatchChoice, b: BatchChoice, overhead: int, bits_per_batch: int, high: bool,
            has_exp: bool, warp: int) -> bool:
    """nvFuser's compareTwoHeuristics: whether `a` beats `b`."""
    def cmp(x: object, y: object) -> int:
        return (x > y) - (x < y)  # type: ignore[operator]

    s = cmp(a.warps_per_sm >= TARGET_WARPS_PER_SM, b.warps_per_sm >= TARGET_WARPS_PER_SM)
    if s:
        return s > 0
    if not (high and has_exp):
        s = cmp(a.tails == 0, b.tails == 0)
        if s:
            return s > 0

    def roomy(c: BatchChoice) -> bool:
        spare = c.registers - c.batches * bits_per_batch // 32
        padded = ceil_div(c.bdimx, warp) * warp
        return (spare >= overhead if high and has_exp else spare > overhead) and padded <= _OPT_MAX_THREADS

    s = cmp(roomy(a), roomy(b))
    if s:
        return s > 0
    if high and (a.waves >= 8 or b.waves >= 8):
        s = cmp(a.waves, b.waves)
        if s:
            return s < 0
    s = cmp(a.warps_per_sm, b.warps_per_sm)
    if s:
        return s > 0
    return a.batches > b.batches
