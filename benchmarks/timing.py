"""Timing on the GPU with CUDA events (and a wall-clock stand-in on the CPU for smoke runs)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch


def input_sets_needed(input_bytes: int, l2_bytes: int, cap: int = 8) -> int:
    """How many input sets to rotate through so that no call reads what the previous one left in
    L2: enough to cover four L2s, and never fewer than two (at most `cap`). On an H100 (50 MiB
    L2), one set timed over and over ran layer_norm, rms_norm and softmax (128 MiB inputs) 2-3%
    faster than two sets taken in turn, and even the bf16 8192^2 transpose, whose 256 MiB of
    inputs are five L2s, ran 2% faster with plain loads (134.7 us against 137.4 with three sets;
    torch.compile's kernel 134.9 against 138.0). Three sets time as two."""
    if input_bytes <= 0:
        return 1
    return max(2, min(cap, math.ceil(4 * l2_bytes / input_bytes)))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_calls(fn: Callable[[Any], Any], sets: Sequence[Any], *, device: str = "cuda", warmup: int = 5,
               target_ms: float = 300.0, min_reps: int = 10, max_reps: int = 200,
               queue_full: bool = False) -> dict[str, Any]:
    """Median time (ms) of fn(set) over rotating input sets.

    Warm-up calls first (compilation, caches, allocator), then the repetition count is chosen
    so the timed calls take about target_ms. On CUDA each call sits between its own pair of
    events recorded on the current stream; back to back, so when the host is slower than the
    device the gaps (host overhead) are part of the figure, as a user's loop sees it. With
    queue_full a long sleep kernel goes first so the host runs ahead and only device time
    between the events remains.
    """
    n = len(sets)
    t0 = time.perf_counter()
    for i in range(max(1, warmup)):
        fn(sets[i % n])
    _sync(device)
    est_ms = (time.perf_counter() - t0) * 1e3 / max(1, warmup)
    reps = int(min(max_reps, max(min_reps, target_ms / max(est_ms, 1e-3))))
    if not device.startswith("cuda"):
        times = []
        for i in range(reps):
            s = time.perf_counter()
            fn(sets[i % n])
            times.append((time.perf_counter() - s) * 1e3)
        return {"median_ms": statistics.median(times), "min_ms": min(times), "reps": reps, "sets": n}
    if queue_full:
        reps = min(reps, 100)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    if queue_full:
        # ~2 GHz: cover the host time of all the calls, at most ~0.5 s
        torch.cuda._sleep(int(min(500.0, est_ms * reps * 1.5 + 5.0) * 2e6))
    for i, (a, b) in enumerate(events):
        a.record()
        fn(sets[i % n])
        b.record()
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) for a, b in events]
    return {"median_ms": statistics.median(times), "min_ms": min(times), "reps": reps, "sets": n}


def copy_bandwidth_gbps(nbytes: int = 1 << 30, reps: int = 20) -> float:
    """Device-to-device copy bandwidth, bytes read plus bytes written, median of `reps` copies."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in events:
        a.record()
        dst.copy_(src)
        b.record()
    torch.cuda.synchronize()
    ms = statistics.median(a.elapsed_time(b) for a, b in events)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (ms * 1e-3) / 1e9
