"""How many registers a thread of a block may have, and how many a thread's arrays need: the
register file's rules as ptxas applies them, which the persistent heuristics' fit and the
lowering's choice of conversions both read."""

from __future__ import annotations

from engine.runtime.device import DeviceProperties

# Registers a thread needs besides its arrays: indices, addresses, loop counters and the
# temporaries of the math (nvFuser's scheduler_utils::register_overhead).
REGISTER_OVERHEAD = 40

# ptxas bounds a kernel's registers by its __launch_bounds__ threads rounded up to four warps:
# 300 threads get 168 registers each (65536 / 384), 458 threads 128 (nvcc 13, sm_90).
_THREAD_GRANULE = 128


def register_cap(dev: DeviceProperties, threads: int) -> int:
    """Registers per thread a block of `threads` can have (ptxas allocates them in eights)."""
    rounded = -(-max(1, threads) // _THREAD_GRANULE) * _THREAD_GRANULE
    per_thread = dev.registers_per_sm // rounded // 8 * 8
    return max(0, min(dev.max_registers_per_thread, per_thread))


def registers_needed(array_bytes: int, overhead: int = REGISTER_OVERHEAD) -> int:
    """Registers a thread needs whose arrays hold `array_bytes`, with `overhead` besides them."""
    return overhead + -(-array_bytes // 4)
