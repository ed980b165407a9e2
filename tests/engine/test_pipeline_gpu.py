"""The inner-outer kernel's cp.async circular buffer and its cooperative grid reduction on the
GPU, against the reference evaluator."""

from __future__ import annotations

import pytest
import torch

from engine.compile import compile_fusion
from engine.config import Options
from engine.reference import evaluate
from tests.engine.test_circular_buffer import seed001_like

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


def check_on_gpu(rows: int, cols: int, overrides: dict | None = None):
    fd, xs = seed001_like(rows, cols)
    cf = compile_fusion(fd, xs, Options(heuristic_overrides=overrides or {}))
    for _ in range(3):  # the grid barrier's and arrival flags must be reset for the next launch
        outs = cf.run(xs, backend="cuda")
    for o, r in zip(outs, evaluate(fd.fusion, xs)):
        torch.testing.assert_close(o.cpu().double(), r.double(), rtol=1e-4, atol=1e-4 * max(1.0, r.abs().max().item()))
    return cf.segments[0]


@pytest.mark.parametrize("rows, cols", [(4096, 4096), (1000, 512), (40, 64), (33, 96)])
def test_inner_outer_pipelined_and_cooperative(rows: int, cols: int) -> None:
    seg = check_on_gpu(rows, cols)
    assert "circular buffer of 2 stages" in seg.stages.get("circular_buffer", "")
    assert seg.launch.cooperative == (seg.launch.grid[1] > 1)
    assert ("gridReduceGroupShares<" in seg.cuda_source) == seg.launch.cooperative


def test_exactly_48k_of_dynamic_shared_memory_with_static_shared_memory_launches() -> None:
    """The opt-in to more shared memory counts the kernel's static __shared__ bytes too (the
    arrival flag of the independent blocks' grid reduction: 200 blocks are not co-resident)."""
    seg = check_on_gpu(4096, 4096, {"rows_per_step": 1, "lparams.gdimy": 200})
    assert seg.launch.shared_mem_bytes == 48 * 1024


@pytest.mark.parametrize("stages", [3, 4])
def test_deeper_circular_buffers_on_gpu(stages: int) -> None:
    seg = check_on_gpu(4096, 4096, {"circular_buffer_stages": stages})
    assert f"circular buffer of {stages} stages" in seg.stages["circular_buffer"]


def test_execute_repeated_calls_follow_their_signature() -> None:
    # the last call's plan serves inputs of its signature; others compile (or find) their own
    from engine import load_fusion

    fd = load_fusion("tests/realworld/scripts/var_mean_size1_reshape_eps_input.py")
    for offset, seed in ((0, 0), (0, 1), (1, 2), (0, 3)):  # offset 1: 4-byte aligned, recompiled
        flat = torch.randn(5, generator=torch.Generator().manual_seed(seed)).cuda()
        xs = [flat[offset:offset + 4].view(2, 2), 1e-5]
        for o, r in zip(fd.execute(xs), evaluate(fd.fusion, xs)):
            torch.testing.assert_close(o, r)
