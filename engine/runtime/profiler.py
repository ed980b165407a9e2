"""Time a kernel and relate it to the device: GB/s, share of peak bandwidth, resources, occupancy.

GPU kernels are timed with a CUDA event pair around each launch (after warm-up)
on the stream they run on, so the figure is device time, not Python overhead.
Bytes read and written come from the caller (it knows which tensors a kernel
reads and writes); tensor_bytes() counts what a tensor really addresses.
Emulated kernels get counts and wall time only: an emulator's speed says nothing
about the GPU.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch

from engine.runtime.abi import LaunchConfig


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes of memory `t` addresses: each distinct element once.

    Broadcast (stride-0, e.g. expanded) dimensions address the same elements again,
    so only dimensions with a nonzero stride count. For views whose strides overlap
    (unfold, as_strided) the count is capped by the span between the lowest and
    highest element, which bounds the distinct elements from above.
    """
    if t.numel() == 0:
        return 0
    count = 1
    span = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0 and size > 1:
            count *= size
            span += (size - 1) * abs(stride)
    return min(count, span) * t.element_size()


@dataclass(frozen=True)
class KernelProfile:
    name: str
    backend: str  # "cuda" or "emulate"
    launch: LaunchConfig
    repeat: int
    # Kernel time (cuda: device time from CUDA events; emulate: host wall time), milliseconds.
    time_ms: float  # median
    time_ms_min: float
    time_ms_max: float
    bytes_read: int | None = None
    bytes_written: int | None = None
    peak_bandwidth_gbps: float | None = None
    registers: int | None = None  # per thread
    static_shared_bytes: int | None = None
    local_bytes: int | None = None  # per thread; nonzero means spills or local arrays
    active_blocks_per_sm: int | None = None
    occupancy: float | None = None  # active warps / max warps per SM
    compile_time_s: float | None = None
    compile_cached: bool | None = None
    device: str | None = None
    # Counts from the launch and, for the emulator, from its statistics.
    blocks: int = 0
    threads: int = 0  # all threads of the grid
    barriers: int | None = None  # __syncthreads passed (emulator)
    warp_syncs: int | None = None  # warp shuffles/votes/__syncwarp (emulator)

    @property
    def bytes_total(self) -> int | None:
        if self.bytes_read is None and self.bytes_written is None:
            return None
        return (self.bytes_read or 0) + (self.bytes_written or 0)

    @property
    def gbps(self) -> float | None:
        """Effective bandwidth: bytes read + written over the median time (GPU only)."""
        if self.backend != "cuda" or self.bytes_total is None or self.time_ms <= 0:
            return None
        return self.bytes_total / (self.time_ms * 1e-3) / 1e9

    @property
    def peak_fraction(self) -> float | None:
        """Effective over peak DRAM bandwidth (0..1, can exceed 1 when data stays in L2)."""
        gbps = self.gbps
        if gbps is None or not self.peak_bandwidth_gbps:
            return None
        return gbps / self.peak_bandwidth_gbps

    def __str__(self) -> str:
        parts = [f"{self.name} [{self.backend}]",
                 f"{_ms(self.time_ms)} (min {_ms(self.time_ms_min)}, max {_ms(self.time_ms_max)}, "
                 f"n={self.repeat})"]
        if self.bytes_total is not None:
            parts.append(f"{_size(self.bytes_read or 0)} read + {_size(self.bytes_written or 0)} written")
        if self.gbps is not None:
            bw = f"{self.gbps:.1f} GB/s"
            if self.peak_fraction is not None:
                bw += f" ({100 * self.peak_fraction:.1f}% of peak)"
            parts.append(bw)
        if self.registers is not None:
            parts.append(f"{self.registers} regs")
        if self.static_shared_bytes is not None:
            parts.append(f"smem {self.static_shared_bytes}+{self.launch.shared_mem_bytes} B")
        if self.local_bytes:
            parts.append(f"local {self.local_bytes} B")
        if self.occupancy is not None:
            parts.append(f"occupancy {100 * self.occupancy:.0f}% ({self.active_blocks_per_sm} blocks/SM)")
        parts.append(f"grid {self.blocks} x {self.launch.threads} threads")
        if self.barriers is not None:
            parts.append(f"{self.barriers} barriers")
        if self.warp_syncs is not None:
            parts.append(f"{self.warp_syncs} warp syncs")
        if self.compile_time_s is not None:
            parts.append(f"compile {self.compile_time_s:.3f}s{' (cached)' if self.compile_cached else ''}")
        return " | ".join(parts)


def _ms(ms: float) -> str:
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _grid_counts(launch: LaunchConfig) -> tuple[int, int]:
    blocks = math.prod(launch.grid)
    return blocks, blocks * launch.threads


# torch.cuda._sleep spins for a number of SM clock cycles: ~2 GHz on the GPUs this engine
# profiles (H100, H200 boost clocks), and at most this long.
SLEEP_CYCLES_PER_S = 2e9
MAX_SLEEP_S = 0.5


def sleep_cycles(seconds: float) -> int:
    """Cycles for torch.cuda._sleep to cover about `seconds` (at most MAX_SLEEP_S)."""
    return int(min(seconds, MAX_SLEEP_S) * SLEEP_CYCLES_PER_S)


def profile_kernel(kernel: Any, args: list[Any], launch: LaunchConfig, *, warmup: int = 3,
                   repeat: int = 20, bytes_read: int | None = None, bytes_written: int | None = None,
                   alloc_strides: dict[str, list[int]] | None = None) -> KernelProfile:
    """Time a CudaKernel: `warmup` untimed launches, then `repeat` launches each between two events."""
    from engine.runtime.cuda import read_device_properties, synchronize

    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    dev = kernel.device
    stream = torch.cuda.current_stream(dev)
    # The first launch synchronizes, so an invalid launch or a fault is reported
    # before any timing; the rest run back to back.
    kernel.launch(args, launch, alloc_strides, stream.cuda_stream, sync=True)
    t0 = time.perf_counter()
    for _ in range(warmup - 1):
        kernel.launch(args, launch, alloc_strides, stream.cuda_stream, sync=False)
    host_s = (time.perf_counter() - t0) / (warmup - 1) if warmup > 1 else 1e-4
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(repeat)]
    # Keep the GPU busy while the launches are queued, so the events time the kernels and
    # not the host's argument packing between them (which would dominate small kernels):
    # a sleep kernel covering the measured host time of all the launches and their events
    # three times over (a host slowed by other work in the process), at least 1 ms.
    torch.cuda._sleep(sleep_cycles(3.0 * repeat * host_s + 1e-3))
    for start, end in events:
        start.record(stream)
        kernel.launch(args, launch, alloc_strides, stream.cuda_stream, sync=False)
        end.record(stream)
    synchronize(stream.cuda_stream, kernel.name)
    times = [start.elapsed_time(end) for start, end in events]

    props = read_device_properties(dev.index)
    occ = kernel.occupancy(launch)
    attrs = kernel.attributes
    blocks, threads = _grid_counts(launch)
    return KernelProfile(
        name=kernel.name, backend="cuda", launch=launch, repeat=repeat,
        time_ms=statistics.median(times), time_ms_min=min(times), time_ms_max=max(times),
        bytes_read=bytes_read, bytes_written=bytes_written,
        peak_bandwidth_gbps=props.memory_bandwidth_gbps,
        registers=attrs.registers, static_shared_bytes=attrs.static_shared_bytes,
        local_bytes=attrs.local_bytes, active_blocks_per_sm=occ.active_blocks_per_sm,
        occupancy=occ.fraction, compile_time_s=kernel.compile_time_s,
        compile_cached=kernel.cached, device=props.name, blocks=blocks, threads=threads,
    )


def _stat(stats: Any, *names: str) -> int | None:
    """First of `names` found in the emulator's stats, whether a mapping or an object."""
    for name in names:
        value = stats.get(name) if isinstance(stats, dict) else getattr(stats, name, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return None


def profile_emulated(kernel: Any, args: list[Any], launch: LaunchConfig, *,
                     alloc_strides: dict[str, list[int]] | None = None) -> KernelProfile:
    """Run an emulated kernel once: wall time and counts (blocks, threads, barriers if it keeps them)."""
    start = time.perf_counter()
    kernel.launch(args, launch, alloc_strides)
    wall_ms = (time.perf_counter() - start) * 1e3
    blocks, threads = _grid_counts(launch)
    stats = getattr(kernel, "stats", None)
    if callable(stats):
        stats = stats()
    barriers = warp_syncs = None
    # Names as the emulator's header counts them (cuda_emu.h's Stats).
    if stats is not None:
        blocks = _stat(stats, "blocks", "num_blocks") or blocks
        threads = _stat(stats, "threads", "num_threads") or threads
        barriers = _stat(stats, "barriers", "syncthreads", "num_barriers")
        warp_syncs = _stat(stats, "warp_syncs")
    compile_time = getattr(kernel, "compile_time_s", None)
    cached = getattr(kernel, "cached", None)
    return KernelProfile(
        name=getattr(kernel, "name", "kernel"), backend="emulate", launch=launch, repeat=1,
        time_ms=wall_ms, time_ms_min=wall_ms, time_ms_max=wall_ms,
        compile_time_s=compile_time if isinstance(compile_time, (int, float)) else None,
        compile_cached=cached if isinstance(cached, bool) else None, blocks=blocks, threads=threads,
        barriers=barriers, warp_syncs=warp_syncs,
    )
