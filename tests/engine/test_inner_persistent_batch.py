"""The inner persistent batch (engine.schedule.inner_persistent_batch) reproduces the batches
nvFuser 0.2.36 chose on the H200 for the same rows (its scheduler_params dump, 2026-11-29):
LayerNorm forward bf16 [4096, 4096] 4 batches of 8, OPT-13B's [8192, 5120] 5 of 8, a dropout
LayerNorm [4096, 2560] with float buffers 4 of 4; and its occupancy model's registers."""

from __future__ import annotations

import pytest

from engine.runtime.device import model
from engine.schedule.inner_persistent_batch import choose_batches, high_bandwidth_flops_ratio, regs_per_thread

H200, H100, A100 = model("H200"), model("H100"), model("A100")


def test_bandwidth_to_flops_ratio_sets_the_h200_and_a100_apart_from_the_h100():
    assert high_bandwidth_flops_ratio(H200) and high_bandwidth_flops_ratio(A100)
    assert not high_bandwidth_flops_ratio(H100)


@pytest.mark.parametrize("threads, regs", [(896, 72), (1024, 64), (2048, 32), (128, 255)])
def test_registers_per_thread_at_an_occupancy(threads: int, regs: int):
    assert regs_per_thread(threads, H200) == regs


@pytest.mark.parametrize("rows, width, vector, buffer_bits, batches, threads", [
    (4096, 4096, 8, 4096 * 16, 4, 128),   # bf16 input projected
    (8192, 5120, 8, 5120 * 16, 5, 128),
    (4096, 2560, 4, 2560 * 32, 4, 160),   # the float residual sum persists
])
def test_nvfusers_choices_on_the_h200(rows: int, width: int, vector: int, buffer_bits: int,
                                      batches: int, threads: int):
    best, cands = choose_batches(width // vector, rows, buffer_bits, width, vector, False, H200)
    assert (best.batches, best.bdimx, best.bdimy) == (batches, threads, 1)
    assert best.tails == 0 and best.warps_per_sm >= 28
    assert [c.batches for c in cands] == list(range(cands[0].batches, cands[-1].batches + 1))


def test_few_rows_take_the_largest_blocks():
    best, _ = choose_batches(512, 8, 4096 * 16, 4096, 8, False, H200)  # 8 rows: not every SM busy
    assert (best.batches, best.bdimx) == (1, 512)
