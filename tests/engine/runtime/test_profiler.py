"""Profiler pieces that need no GPU: byte counting, the summary line, emulated profiles."""

from __future__ import annotations

import pytest
import torch

from engine.runtime.abi import LaunchConfig
from engine.runtime.profiler import KernelProfile, profile_emulated, tensor_bytes


def test_tensor_bytes_contiguous_and_dtypes():
    assert tensor_bytes(torch.zeros(3, 5)) == 60
    assert tensor_bytes(torch.zeros(3, 5, dtype=torch.bfloat16)) == 30
    assert tensor_bytes(torch.zeros(7, dtype=torch.float64)) == 56
    assert tensor_bytes(torch.zeros(0, 5)) == 0
    assert tensor_bytes(torch.tensor(1.0)) == 4


def test_tensor_bytes_counts_broadcast_elements_once():
    row = torch.zeros(64)
    assert tensor_bytes(row.expand(1000, 64)) == 64 * 4
    assert tensor_bytes(torch.zeros(8, 1).expand(8, 32)) == 8 * 4
    assert tensor_bytes(torch.tensor(2.0).expand(4, 4, 4)) == 4
    assert tensor_bytes(torch.zeros(3, 1, 5).expand(3, 7, 5)) == 15 * 4


def test_tensor_bytes_views():
    base = torch.zeros(10, 20)
    assert tensor_bytes(base.t()) == 800
    assert tensor_bytes(base[:, ::2]) == 10 * 10 * 4  # only every other column is addressed
    assert tensor_bytes(base[2:5]) == 3 * 20 * 4
    # Overlapping windows: 17 windows of 4 over 20 elements address 20 distinct ones.
    assert tensor_bytes(torch.zeros(20).unfold(0, 4, 1)) == 20 * 4


def _profile(**kw) -> KernelProfile:
    fields = dict(name="k", backend="cuda", launch=LaunchConfig((10, 1, 1), (128, 1, 1)), repeat=5,
                  time_ms=0.5, time_ms_min=0.4, time_ms_max=0.7, bytes_read=2_000_000,
                  bytes_written=1_000_000, peak_bandwidth_gbps=3000.0, registers=32,
                  static_shared_bytes=0, local_bytes=0, active_blocks_per_sm=16, occupancy=1.0,
                  compile_time_s=0.25, compile_cached=False, blocks=10, threads=1280)
    fields.update(kw)
    return KernelProfile(**fields)


def test_bandwidth_and_summary():
    p = _profile()
    assert p.bytes_total == 3_000_000
    assert p.gbps == pytest.approx(3e6 / 0.5e-3 / 1e9)  # 6 GB/s
    assert p.peak_fraction == pytest.approx(6.0 / 3000.0)
    text = str(p)
    assert "\n" not in text
    assert text.startswith("k [cuda] | 500.0 us (min 400.0 us, max 700.0 us, n=5)")
    assert "2.00 MB read + 1.00 MB written" in text
    assert "6.0 GB/s (0.2% of peak)" in text
    assert "32 regs" in text and "occupancy 100% (16 blocks/SM)" in text
    assert "compile 0.250s" in text


def test_no_bandwidth_without_bytes_or_for_the_emulator():
    assert _profile(bytes_read=None, bytes_written=None).gbps is None
    assert _profile(backend="emulate").gbps is None
    assert "GB/s" not in str(_profile(backend="emulate"))


class _FakeEmulated:
    """Stands in for engine.runtime.emulate.EmulatedKernel: a launch and a stats mapping."""

    name = "emu_k"

    def __init__(self, stats):
        self.stats = stats
        self.launched = 0

    def launch(self, args, launch, alloc_strides=None):
        self.launched += 1


def test_profile_emulated_counts_from_launch_and_stats():
    launch = LaunchConfig((4, 2, 1), (64, 1, 1))
    k = _FakeEmulated({"blocks": 8, "threads": 512, "barriers": 3, "warp_syncs": 5, "switches": 40})
    p = profile_emulated(k, [], launch)
    assert k.launched == 1
    assert p.backend == "emulate" and p.name == "emu_k"
    assert p.blocks == 8 and p.threads == 512 and p.barriers == 3 and p.warp_syncs == 5
    assert p.time_ms >= 0 and p.gbps is None
    assert "3 barriers" in str(p)
    bare = profile_emulated(_FakeEmulated(None), [], launch)
    assert bare.barriers is None and (bare.blocks, bare.threads) == (8, 512)

    class Stats:  # an object with attributes works as well as a mapping
        barriers = 2
    assert profile_emulated(_FakeEmulated(Stats()), [], launch).barriers == 2
