"""Block size and persistent grid of the combined inner-outer schedule for rows wider than
1024 elements: nvFuser's multi-wave heuristic (normalization_inner_outer_multi_wave.cpp).

One row per block at a time, its vectors spread over the block's threads and a persistent
batch per thread; the grid is as many blocks as the SMs hold at once (blocks_per_sm x SMs),
each looping over its share of the rows. Every block size from 128 threads (fewer when the
row is short) to the fewest that give each thread at least `minimum_batch` vectors (512 at
most) is rated: the registers its persistent buffers need per thread (the buffer bits of a
thread's elements and a fixed overhead), the blocks an SM then holds (registers, and shared
memory when buffers are there), and the registers each thread may have at that occupancy. The
best leaves registers to spare, then reaches at least 16 warps an SM, then has fewer threads
(cheaper block reductions). The kernel's launch bounds then ask ptxas for registers that keep
those blocks co-resident. A launch of fewer than MIN_BLOCKS_PER_SM blocks an SM is not taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.runtime.registers import REGISTER_OVERHEAD
from engine.schedule.inner_persistent_batch import regs_per_thread, threads_per_sm
from engine.schedule.tools import ceil_div, next_pow2

if TYPE_CHECKING:
    from engine.runtime.device import DeviceProperties

THREADS_MIN = 128
THREADS_MAX = 512
# Rows each block handles at least: a grid larger than the rows over this leaves too little
# work per block to pay for its share of the outer reductions' final step.
ROWS_PER_BLOCK_MIN = 8
# Warps an SM allocates registers for in groups of this many.
_WARP_GRANULE = 4
# Shared memory the driver reserves per block (sm_80 and later).
_SMEM_RESERVED = 1024
_MAX_BLOCKS_PER_SM = 32
# The fewest blocks an SM a multi-wave launch keeps; with fewer, the schedule of several rows
# per block (engine.schedule.inner_outer_heuristics) is used. On the H200, norm backwards whose
# arrays allowed only one or two blocks of 128-256 threads an SM ran up to 17% slower than
# with it, while three or more blocks ran up to 25% faster.
MIN_BLOCKS_PER_SM = 3


def minimum_batch(inner: int, outer: int) -> int:
    """Vectors each thread keeps at least: wide rows give each thread more work and make the
    block reductions cheaper (tuned by nvFuser for layer-norm backward on the A100)."""
    if inner >= 3072:
        return 3 if outer <= 2048 and inner == 3072 else 4
    return 2 if inner >= 2048 else 1


@dataclass(frozen=True)
class MultiWave:
    threads: int  # threads per block, all along the row
    batch: int  # vectors of the row each thread keeps
    blocks_per_sm: int
    gdimy: int
    warps_per_sm: int
    registers_needed: int  # per thread, estimated from the persistent buffers
    registers_available: int  # per thread at this occupancy

    @property
    def spare(self) -> int:
        return self.registers_available - self.registers_needed


def _blocks_per_sm(dev: DeviceProperties, threads: int, regs: int, smem_per_block: int) -> int:
    per_sm = min(threads_per_sm(regs, dev), dev.max_threads_per_sm)
    warps = ceil_div(ceil_div(threads, dev.warp_size), _WARP_GRANULE) * _WARP_GRANULE
    by_regs = per_sm // dev.warp_size // warps
    by_smem = (dev.shared_memory_per_sm // (smem_per_block + _SMEM_RESERVED)
               if smem_per_block else _MAX_BLOCKS_PER_SM)
    return max(0, min(by_regs, by_smem, _MAX_BLOCKS_PER_SM))


def candidate(dev: DeviceProperties, inner: int, outer: int, vect: int, threads: int,
              reg_bits_per_elem: int, smem_per_block: int) -> MultiWave | None:
    """The launch for `threads` per block, or None when fewer than MIN_BLOCKS_PER_SM of its
    blocks fit an SM."""
    batch = ceil_div(ceil_div(inner, vect), threads)
    need = min(255, reg_bits_per_elem * batch * vect // 32 + REGISTER_OVERHEAD)
    blocks = _blocks_per_sm(dev, threads, need, smem_per_block)
    if blocks < MIN_BLOCKS_PER_SM:
        return None
    most = ceil_div(ceil_div(outer, ROWS_PER_BLOCK_MIN), dev.sm_count) * dev.sm_count
    while blocks > MIN_BLOCKS_PER_SM and blocks * dev.sm_count > most:
        blocks -= 1
    warps = ceil_div(threads, dev.warp_size) * blocks
    return MultiWave(threads, batch, blocks, blocks * dev.sm_count, warps, need,
                     regs_per_thread(warps * dev.warp_size, dev))


def rank(c: MultiWave) -> tuple[int, int, int]:
    """Registers to spare first; then, where either falls below 16 warps an SM, occupancy;
    then fewer threads. (nvFuser's comparator, as a key: occupancy counts only below 16.)"""
    return (0 if c.spare > 0 else 1, -min(c.warps_per_sm, 16), c.threads)


def multi_wave(dev: DeviceProperties, inner: int, outer: int, vect: int, reg_bits_per_elem: int,
               smem_bytes_per_row: int) -> MultiWave | None:
    """The best launch over the block sizes; None when none fits."""
    after_v = ceil_div(inner, vect)
    lo = next_pow2(min(THREADS_MIN, after_v))
    hi = min(THREADS_MAX, next_pow2(max(lo, ceil_div(after_v, minimum_batch(inner, outer)))))
    smem = smem_bytes_per_row
    found = []
    t = hi
    while t >= lo:
        c = candidate(dev, inner, outer, vect, t, reg_bits_per_elem, smem + t * 4 if smem else 0)
        if c is not None:
            found.append(c)
        t //= 2
    return min(found, key=rank) if found else None
